"""An induction head forms under a HuggingFace Trainer in about a CPU minute, watched by the monitor.

    python examples/hf_trainer_monitor.py [--smoke] [--llc] [--out DIR]

Extras: ``hf`` (the Trainer) and ``log`` (its TensorBoard reporting), and ``llc`` for ``--llc``:
``pip install 'inductionlab[hf,log,llc]'`` (docs/conventions.md#extras; ``make setup`` installs every extra).

A two-layer attention-only Llama (32 wide, 2 heads per layer) learns windows of random tokens, each sequence
repeating a window of its own length (``inductionlab.monitor.RepeatedWindows``); the monitor measures every head's
induction score every 25 steps, logs it through the Trainer to TensorBoard (``DIR/runs/...``), and stops training
at the phase change.  It prints the phase line, the step it stopped at and where the events are.  ``--llc`` also
estimates the local learning coefficient at every measurement (the ``llc`` extra, devinterp), on a sample of the
training sequences, trains all 800 steps instead of stopping, and draws the three signals (docs/monitor.md#the-llc).
"""

import argparse
import time
from pathlib import Path

import torch

from inductionlab.extras import require
from inductionlab.monitor import InductionCallback, LLCConfig, Monitor, MonitorConfig, RepeatedWindows
from inductionlab.monitor.phase import phase_line

HERE = "examples/hf_trainer_monitor.py"  # what needs each extra, as a missing one's message says
transformers = require("transformers", HERE)  # the hf extra: transformers, and accelerate for the Trainer
require("accelerate", HERE)
require("tensorboard", HERE)  # the log extra: report_to=["tensorboard"]

parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true", help="a few seconds (the path only: no head forms)")
parser.add_argument("--llc", action="store_true", help="also the LLC at every measurement; no early stop (~2 min)")
parser.add_argument("--out", default="hf-monitor", help="the Trainer's output_dir (TensorBoard events under runs/)")
args = parser.parse_args()

torch.set_num_threads(1)  # a model this small only waits on a second thread
vocab, L = 64, 32
config = transformers.LlamaConfig(
    vocab_size=vocab,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=1,
    max_position_embeddings=L,
    tie_word_embeddings=False,
    bos_token_id=0,
    eos_token_id=0,
    pad_token_id=0,
)
transformers.set_seed(0)
model = transformers.LlamaForCausalLM(config)  # sdpa attention: the monitor switches to eager while it measures
for name, param in model.named_parameters():  # attention only: the one-unit MLPs output zero and stay frozen
    if ".mlp." in name:
        with torch.no_grad():
            param.zero_() if ".down_proj." in name else None
        param.requires_grad_(False)

steps = 40 if args.smoke else 800
training = transformers.TrainingArguments(
    output_dir=args.out,
    max_steps=steps,
    per_device_train_batch_size=32,
    learning_rate=3e-3,
    lr_scheduler_type="constant",
    weight_decay=0.0,
    use_cpu=True,
    report_to=["tensorboard"],
    logging_steps=25,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)
data = RepeatedWindows(steps * 32, vocab, L)
trainer = transformers.Trainer(model=model, args=training, train_dataset=data)
llc = {"llc": LLCConfig(), "llc_tokens": data.tokens[:256]} if args.llc else {}
config = MonitorConfig(every=25, batch=16, period=12, vocab=vocab)
monitor = Monitor(model, config, out_dir=Path(args.out) / "monitor", **llc)


def stop(phase, control):
    control.should_training_stop = True  # the head has formed: nothing more to see


trainer.remove_callback(transformers.PrinterCallback)  # the numbers go to TensorBoard, not the terminal
trainer.add_callback(InductionCallback(monitor, trainer, on_phase_change=None if args.llc else stop))
start = time.process_time()
trainer.train()
phase = monitor.phase()
print(phase_line(phase))
print(f"stopped at step {trainer.state.global_step} of {steps} ({time.process_time() - start:.0f} CPU s)")
if args.llc:
    print(f"figure with the LLC: {monitor.plot()}")
print(f"TensorBoard: tensorboard --logdir {Path(args.out) / 'runs'}; the monitor's files: {monitor.out_dir}")
