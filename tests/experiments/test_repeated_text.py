"""The repeated-text ablation figure names a head an induction head only at the monitor's threshold."""

import pandas as pd
import pytest

from inductionlab.experiments.wang import repeated_text


@pytest.mark.parametrize("score, named", [(0.62, "induction head (1, 0), score 0.62"), (0.03, "no induction head")])
def test_a_head_is_an_induction_head_only_at_the_monitors_threshold(score, named):
    scores = pd.Series([0.01, score, 0.02], index=pd.MultiIndex.from_tuples([(0, 0), (1, 0), (1, 1)]))
    text = repeated_text._induction_head(scores)
    assert text.startswith(named) and str(repeated_text.INDUCTION_THRESHOLD) in text
    assert repeated_text.INDUCTION_THRESHOLD == 0.3
