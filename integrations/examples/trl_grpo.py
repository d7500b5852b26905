"""A real GRPO run with TRL's GRPOTrainer whose reward is `kforge serve`.

    python integrations/examples/trl_grpo.py --backend host \
        --kforge build5/kforge --steps 2 --inject 2 --inject-wrong 1

Everything is made here, nothing is downloaded: a byte-level BPE tokenizer
trained on the prompts (the `tokenizers` library, wrapped in
PreTrainedTokenizerFast with a chat template) and a small causal LM with
random weights (a Qwen2 config, about 3 M parameters). The prompts are the
ones `kforge serve` renders for each problem (POST /v1/episodes: its system
message and observation), one dataset row per problem with a problem_id
column. The script starts `kforge serve` on loopback (port 0), trains
--steps optimizer steps with reward_funcs=[integrations/trl_reward.py's
kforge_reward] and stops the server.

A random model writes no kernels, so its rewards would all be the design's
lowest and every advantage zero. --inject N appends the task's known correct
kernel (tasks/<id>/candidates/fast.c, or fast.cu on the cuda backend) to N
completions of each group before they are scored, and --inject-wrong M the
task's wrong.c to M others (in those the model's own ``` become ''', so that
they open no fence around the appended block, and its NUL characters are
dropped, as kforge's client does, since kforge serve refuses a body with
one, 400 nul_in_string): kforge then
really compiles, checks and times them, the rewards differ within each group
and the advantages are not zero. The tokens trained on are still the model's
own.

Per step it prints the rewards, kforge's verdicts counted, TRL's loss and
grad_norm, and how much the weights moved (max |dw|, ||dw||, a checksum
before and after); at the end one line "TRL-GRPO-KFORGE SUMMARY: PASS ..."
(exit 0) or "... FAIL ..." (exit 1). PASS: every step ran, each changed the
weights, no reward was None (infra_error), and with injection some group's
rewards differed.
"""
import argparse
import collections
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Nothing is fetched from a hub, and no telemetry is sent (TRL's trainers
# send it unless told not to).
for _k in ("HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
           "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_k, "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # integrations/


def log(*a):
    print("[trl_grpo]", *a, flush=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["host", "cuda"], default="host",
                    help="kforge serve's backend (where kernels run)")
    ap.add_argument("--problem", default=None,
                    help="problem ids, comma-separated (default "
                    "reduction/row_sum,activation/gelu)")
    ap.add_argument("--steps", type=int, default=2,
                    help="optimizer steps (max_steps), at least 1")
    ap.add_argument("--kforge", default=os.environ.get("KFORGE_BIN")
                    or os.path.join(ROOT, "build5", "kforge"),
                    help="the kforge binary (its kforge-serve beside it)")
    ap.add_argument("--tasks", default=os.path.join(ROOT, "tasks"))
    ap.add_argument("--url", default=None,
                    help="use this running kforge serve instead of "
                    "starting one")
    ap.add_argument("--inject", type=int, default=2,
                    help="completions per group given the correct kernel")
    ap.add_argument("--inject-wrong", type=int, default=1,
                    help="completions per group given the wrong kernel")
    ap.add_argument("--num-generations", type=int, default=4)
    ap.add_argument("--max-completion-length", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"],
                    default="auto", help="where the model trains")
    ap.add_argument("--workers", type=int, default=2,
                    help="kforge serve --workers")
    ap.add_argument("--time-cap", type=float, default=2,
                    help="kforge serve --time-cap (s of timing per item)")
    ap.add_argument("--reward", default=None,
                    help="kforge reward design ($KFORGE_REWARD; default the "
                    "server's, log_speedup)")
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--out", default=None, help="output dir (default a "
                    "temporary one, removed at the end)")
    a = ap.parse_args(argv)
    if a.steps < 1 or a.num_generations < 2:
        ap.error("--steps >= 1 and --num-generations >= 2")
    if a.inject + a.inject_wrong > a.num_generations:
        ap.error("--inject + --inject-wrong > --num-generations")
    return a


# ---------------------------------------------------------------- imports

def import_training_stack():
    """torch, transformers and TRL. Where `datasets` or `pyarrow` cannot be
    imported (a machine given only small wheels), the stand-ins of
    trl_stubs/ take their place (trl_stubs/README.md)."""
    stubbed = []
    for mod in ("pyarrow", "datasets"):
        try:
            __import__(mod)
        except ImportError as e:
            stubbed.append(f"{mod} ({e})")
    if stubbed:
        sys.path.insert(0, os.path.join(HERE, "trl_stubs"))
        for m in [m for m in sys.modules if m.split(".")[0] in
                  ("pyarrow", "datasets")]:
            del sys.modules[m]
        log("stand-ins from integrations/examples/trl_stubs for:",
            "; ".join(stubbed))
    import torch
    import transformers
    import trl
    from trl import GRPOConfig, GRPOTrainer
    import datasets
    log(f"python {sys.version.split()[0]} torch {torch.__version__} "
        f"transformers {transformers.__version__} trl {trl.__version__} "
        f"datasets {datasets.__version__} (trl from "
        f"{os.path.dirname(trl.__file__)})")
    return torch, transformers, trl, GRPOConfig, GRPOTrainer, datasets


# ----------------------------------------------------------------- server

class Server:
    """kforge serve on loopback, a port of its own, a store in tmp."""

    def __init__(self, args, tmp):
        self.proc = None
        self.url = args.url
        if self.url:
            return
        exe = os.path.abspath(args.kforge)
        if not os.access(exe, os.X_OK):
            sys.exit(f"[trl_grpo] no kforge binary at {exe} (--kforge)")
        env = dict(os.environ)
        self._libs(exe, env)
        port_file = os.path.join(tmp, "port")
        cmd = [exe, "serve", "--port", "0", "--port-file", port_file,
               "--host", "127.0.0.1", "--db", os.path.join(tmp, "serve.db"),
               "--tasks", os.path.abspath(args.tasks),
               "--backend", args.backend, "--workers", str(args.workers),
               "--time-cap", str(args.time_cap)]
        log("starting:", " ".join(cmd))
        self.log_path = os.path.join(tmp, "serve.log")
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "w"),
                                     stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        t0 = time.time()
        while time.time() - t0 < 60:
            if self.proc.poll() is not None:
                sys.exit("[trl_grpo] kforge serve exited at start:\n" +
                         open(self.log_path).read()[-3000:])
            if os.path.exists(port_file) and open(port_file).read().strip():
                self.url = "http://127.0.0.1:" + \
                    open(port_file).read().strip()
                try:
                    import kforge_client
                    h = kforge_client.request("GET", "/v1/health",
                                              url=self.url, retries=0)
                    log("kforge serve up:", json.dumps(h))
                    return
                except Exception:
                    pass
            time.sleep(0.2)
        self.stop()
        sys.exit("[trl_grpo] kforge serve did not answer in 60 s")

    @staticmethod
    def _libs(exe, env):
        # kforge-serve needs libmicrohttpd (and its libgnutls): the build's
        # lib/ has them where trl_grpo_prepare.sh put them there; the
        # fallback copies are used only for what the machine lacks.
        serve = os.path.join(os.path.dirname(exe), "kforge-serve")
        try:
            out = subprocess.run(["ldd", serve], capture_output=True,
                                 text=True).stdout
        except OSError:
            return
        missing = [ln.split()[0] for ln in out.splitlines()
                   if "not found" in ln]
        if not missing:
            return
        fb = os.path.join(os.path.dirname(exe), "lib", "fallback")
        log("kforge-serve lacks", ", ".join(missing), "; trying", fb)
        if os.path.isdir(fb):
            env["LD_LIBRARY_PATH"] = fb + (":" + env["LD_LIBRARY_PATH"]
                                           if env.get("LD_LIBRARY_PATH")
                                           else "")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def server_prompts(problems):
    """The prompt kforge serve renders for each problem: the system message
    and first observation of an episode, which is ended at once."""
    import kforge_client as kc
    rows = []
    for pid in problems:
        ep = kc.request("POST", "/v1/episodes", {"problem_id": pid})
        kc.request("DELETE", f"/v1/episodes/{ep['episode_id']}")
        rows.append({"prompt": [{"role": "system", "content": ep["system"]},
                                {"role": "user",
                                 "content": ep["observation"]}],
                     "problem_id": pid})
    return rows


# ------------------------------------------------------ tokenizer and model

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tokenizer(texts, vocab):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, tr)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok,
                                 eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
    hf.chat_template = CHAT_TEMPLATE
    return hf


def build_model(tokenizer, hidden, layers, seed):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden,
        intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


# ----------------------------------------------------------------- reward

def candidate(tasks, pid, backend, name):
    ext = ".cu" if backend == "cuda" else ".c"
    path = os.path.join(tasks, pid, "candidates", name + ext)
    if not os.path.exists(path):
        return None
    return open(path).read()


def completion_text(c):
    if isinstance(c, list):
        for m in reversed(c):
            if isinstance(m, dict) and isinstance(m.get("content"), str):
                return m["content"]
        return ""
    return c if isinstance(c, str) else ""


def with_code(c, code, lang):
    # The model's text keeps no ``` of its own (an odd one would open a
    # fence that swallows the appended block) and no NUL (kforge serve
    # refuses a body holding U+0000: 400 nul_in_string).
    text = completion_text(c).replace("```", "'''").replace("\x00", "")
    block = f"\n\n```{lang}\n{code}```\n"
    if isinstance(c, list):
        return [dict(m) for m in c[:-1]] + [
            {"role": "assistant", "content": text + block}]
    return text + block


def make_reward(args, steps_log):
    """reward_funcs entry: kforge_reward (integrations/trl_reward.py) on the
    completions, N of each group seeded with the correct kernel and M with
    the wrong one (--inject, --inject-wrong)."""
    import trl_reward
    lang = "cuda" if args.backend == "cuda" else "c"
    kernels = {}

    def kernels_for(pid):
        if pid not in kernels:
            good = candidate(args.tasks, pid, args.backend, "fast") or \
                candidate(args.tasks, pid, args.backend, "naive")
            bad = candidate(args.tasks, pid, args.backend, "wrong")
            if args.inject and good is None:
                raise SystemExit(f"[trl_grpo] {pid}: no candidates/fast or "
                                 "naive kernel to inject")
            kernels[pid] = (good, bad)
        return kernels[pid]

    def kforge(prompts, completions, problem_id, **kwargs):
        seen = collections.Counter()
        injected = []
        out = []
        for p, c, pid in zip(prompts, completions, problem_id):
            k = hashlib.sha1(str(p).encode()).hexdigest()
            j = seen[k]
            seen[k] += 1
            good, bad = kernels_for(pid)
            if j < args.inject:
                out.append(with_code(c, good, lang))
                injected.append("correct")
            elif j < args.inject + args.inject_wrong and bad is not None:
                out.append(with_code(c, bad, lang))
                injected.append("wrong")
            else:
                out.append(c)
                injected.append("model")
        cols = {}
        user_extra = kwargs.get("log_extra")

        def log_extra(column, values):
            cols[column] = list(values)
            if callable(user_extra):
                user_extra(column, values)
        kwargs["log_extra"] = log_extra
        t0 = time.time()
        rewards = trl_reward.kforge_reward(prompts, out, problem_id,
                                           **kwargs)
        state = kwargs.get("trainer_state")
        step = (state.global_step + 1) if state is not None else \
            len(steps_log) + 1
        statuses = cols.get("kforge_status", [None] * len(rewards))
        groups = collections.defaultdict(list)
        for p, r in zip(prompts, rewards):
            groups[hashlib.sha1(str(p).encode()).hexdigest()].append(r)
        steps_log.append({
            "step": step, "rewards": rewards, "status": statuses,
            "injected": injected, "problem_id": list(problem_id),
            "seconds": time.time() - t0,
            "model_lengths": [len(completion_text(c)) for c in completions],
            "group_std": [statistics_std(g) for g in groups.values()]})
        counts = collections.Counter(statuses)
        log(f"step {step} rewards: " + " ".join(
            f"{pid.split('/')[-1]}:{src[0]}:{s}:"
            f"{'None' if r is None else format(r, '.3f')}"
            for pid, src, s, r in zip(problem_id, injected, statuses,
                                      rewards)))
        log(f"step {step} verdicts: {dict(sorted(counts.items()))} "
            f"(scored in {time.time() - t0:.1f} s)")
        return rewards
    kforge.__name__ = "kforge"
    return kforge


def statistics_std(xs):
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


# ------------------------------------------------------------ the weights

def weights(model):
    import torch
    with torch.no_grad():
        return torch.cat([p.detach().float().reshape(-1).cpu()
                          for p in model.parameters()])


def checksum(w):
    return hashlib.sha256(w.numpy().tobytes()).hexdigest()[:16]


def make_callback(model_ref, steps_log, moves, logs):
    from transformers import TrainerCallback

    class Watch(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            self.prev = weights(model)
            log(f"weights before training: {self.prev.numel()} values, "
                f"sum {float(self.prev.double().sum()):.6f}, "
                f"sha256 {checksum(self.prev)}")

        def on_step_end(self, args, state, control, model=None, **kw):
            w = weights(model)
            d = w - self.prev
            moves.append({"step": state.global_step,
                          "max_abs": float(d.abs().max()),
                          "l2": float(d.double().norm()),
                          "changed": int((d != 0).sum()),
                          "before": checksum(self.prev),
                          "after": checksum(w)})
            self.prev = w

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                rec = dict(logs, step=state.global_step)
                logs_by_step = {x["step"]: x for x in moves}
                logs_list.append(rec)
                m = logs_by_step.get(state.global_step, {})
                log(f"step {state.global_step} loss {logs.get('loss')} "
                    f"grad_norm {logs.get('grad_norm')} "
                    f"reward {logs.get('reward')} "
                    f"reward_std {logs.get('reward_std')} "
                    f"kforge/correct {logs.get('kforge/correct')} "
                    f"| weights: max|dw| {m.get('max_abs', 0):.3e} "
                    f"||dw|| {m.get('l2', 0):.3e} changed "
                    f"{m.get('changed', 0)} sha256 {m.get('before')} -> "
                    f"{m.get('after')}")
    logs_list = logs
    return Watch()


# ------------------------------------------------------------------- main

def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    # A TERM (a timeout's) ends the run through the finally that stops the
    # server.
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    torch, transformers, trl, GRPOConfig, GRPOTrainer, datasets = \
        import_training_stack()
    if args.reward:
        os.environ["KFORGE_REWARD"] = args.reward
    problems = [p for p in (args.problem or
                            "reduction/row_sum,activation/gelu").split(",")
                if p]
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    tmp = tempfile.mkdtemp(prefix="kforge-grpo-")
    out_dir = args.out or os.path.join(tmp, "out")
    server = Server(args, tmp)
    os.environ["KFORGE_URL"] = server.url
    steps_log, moves, logs = [], [], []
    ok = False
    try:
        rows = server_prompts(problems)
        texts = [m["content"] for r in rows for m in r["prompt"]]
        for pid in problems:
            for n in ("fast", "naive", "wrong", "reference"):
                src = candidate(args.tasks, pid, args.backend, n)
                if src:
                    texts.append(src)
        tokenizer = build_tokenizer(texts, args.vocab)
        model = build_model(tokenizer, args.hidden, args.layers, args.seed)
        n_params = sum(p.numel() for p in model.parameters())
        plen = [len(tokenizer.apply_chat_template(
            r["prompt"], add_generation_prompt=True, tokenize=True,
            return_dict=False)) for r in rows]
        log(f"tokenizer: vocab {len(tokenizer)}; model: Qwen2 random "
            f"weights, {n_params} parameters, hidden {args.hidden}, "
            f"{args.layers} layers; device {args.device}")
        log(f"dataset: {len(rows)} rows {problems}, prompt tokens {plen}")
        ds = datasets.Dataset.from_list(rows)
        bf16 = args.device == "cuda" and torch.cuda.is_bf16_supported()
        cfg = GRPOConfig(
            output_dir=out_dir, max_steps=args.steps,
            per_device_train_batch_size=args.num_generations * len(rows),
            num_generations=args.num_generations,
            max_completion_length=args.max_completion_length,
            use_vllm=False, learning_rate=args.lr, logging_steps=1,
            lr_scheduler_type="constant",
            report_to="none", save_strategy="no", seed=args.seed,
            bf16=bf16, gradient_checkpointing=False,
            use_cpu=args.device == "cpu", disable_tqdm=True,
            dataloader_num_workers=0)
        log(f"GRPOConfig: num_generations {cfg.num_generations}, "
            f"per_device_train_batch_size {cfg.per_device_train_batch_size},"
            f" generation_batch_size {cfg.generation_batch_size}, "
            f"steps_per_generation {cfg.steps_per_generation}, max_steps "
            f"{cfg.max_steps}, max_completion_length "
            f"{cfg.max_completion_length}, use_vllm {cfg.use_vllm}, beta "
            f"{cfg.beta}, loss_type {cfg.loss_type}, scale_rewards "
            f"{cfg.scale_rewards}, lr {cfg.learning_rate}, bf16 {cfg.bf16}")
        trainer = GRPOTrainer(
            model=model, reward_funcs=[make_reward(args, steps_log)],
            args=cfg, train_dataset=ds, processing_class=tokenizer,
            callbacks=[make_callback(model, steps_log, moves, logs)])
        t0 = time.time()
        result = trainer.train()
        train_s = time.time() - t0
        gs = trainer.state.global_step
        counts = collections.Counter(s for x in steps_log
                                     for s in x["status"])
        n_none = sum(r is None for x in steps_log for r in x["rewards"])
        varied = any(s > 0 for x in steps_log for s in x["group_std"])
        moved = [m for m in moves if m["changed"] > 0]
        seeded = collections.Counter(
            (src, s) for x in steps_log
            for src, s in zip(x["injected"], x["status"]))
        ok = (gs == args.steps and len(moved) == len(moves) == gs and
              n_none == 0 and (varied or args.inject == 0))
        mean_r = [round(sum(r for r in x["rewards"] if r is not None) /
                        max(1, sum(r is not None for r in x["rewards"])), 4)
                  for x in steps_log]
        summary = {
            "pass": ok, "backend": args.backend, "device": args.device,
            "problems": problems, "optimizer_steps": gs,
            "completions_per_step": [len(x["rewards"]) for x in steps_log],
            "reward_mean_per_step": mean_r,
            "verdicts": dict(sorted(counts.items())),
            "rewards_none": n_none, "group_rewards_varied": varied,
            "verdicts_by_source": {f"{a}:{b}": n for (a, b), n in
                                   sorted(seeded.items())},
            "loss": [x.get("loss") for x in logs],
            "grad_norm": [x.get("grad_norm") for x in logs],
            "weights_max_abs_change": [m["max_abs"] for m in moves],
            "weights_sha256": [moves[0]["before"]] + [m["after"]
                                                      for m in moves]
            if moves else [],
            "train_seconds": round(train_s, 1),
            "train_loss": result.training_loss,
            "parameters": n_params, "trl": trl.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__}
        log("summary json: " + json.dumps(summary))
        print(f"TRL-GRPO-KFORGE SUMMARY: {'PASS' if ok else 'FAIL'} "
              f"steps={gs}/{args.steps} backend={args.backend} "
              f"device={args.device} problems={','.join(problems)} "
              f"reward_mean={mean_r} verdicts={dict(sorted(counts.items()))}"
              f" by_source={summary['verdicts_by_source']}"
              f" none={n_none} loss={summary['loss']} "
              f"grad_norm={summary['grad_norm']} weights_changed="
              f"{len(moved)}/{gs} max|dw|="
              f"{[f'{m:.2e}' for m in summary['weights_max_abs_change']]} "
              f"trl={trl.__version__} time={time.time() - t_start:.0f}s",
              flush=True)
    finally:
        server.stop()
        if not args.out:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
