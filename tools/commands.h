/*
 * commands.h: the subcommands of the kforge CLI that live in files of their
 * own (tools/kforge_<name>.c). Each has a run function, called with argv[0]
 * the command's name, that returns the process's exit code, and a usage text.
 */
#ifndef KFORGE_TOOLS_COMMANDS_H
#define KFORGE_TOOLS_COMMANDS_H

#endif
