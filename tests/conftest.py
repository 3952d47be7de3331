import os
import random
import signal

import pytest
import torch

from inductionlab.tasks.text import ENV
from inductionlab.train import loop

WORDS = [f"w{i}" for i in range(40)]

# Each test on one core (`make test` runs two at once, pytest -n 2): a run started without --threads takes this.
os.environ["OMP_NUM_THREADS"] = "1"


def write_corpus(folder, layout="{split}.txt", lines=60, seed=0):
    """A small text corpus the tests make themselves: three splits of random words."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15))) for _ in range(lines))
        (folder / layout.format(split=split)).write_text(text + "\n", encoding="utf-8")
    return folder


class CtrlCAt(loop.Hook):
    """Sends SIGINT to this process after the update of step ``step`` of stage ``stage`` (0-based)."""

    def __init__(self, stage: int, step: int):
        self.stage, self.step = stage, step

    def after_step(self, state):
        if (state.stage_index, state.step) == (self.stage, self.step):
            os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield


@pytest.fixture(autouse=True, scope="session")
def _text_data(tmp_path_factory):
    """Experiments that read text (wikitext, repeated-text) find a tiny corpus through $INDUCTIONLAB_DATA."""
    mp = pytest.MonkeyPatch()
    mp.setenv(ENV, str(write_corpus(tmp_path_factory.mktemp("text"))))
    yield
    mp.undo()
