# Fails at import with a message holding a lone surrogate (the load's
# frame carries it).
raise ImportError("no module \ud83d here")
