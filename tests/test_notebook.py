"""examples/quickstart.ipynb runs top to bottom at its smoke sizes with no cell error, shows numbers (no NaN or
None), and is stored without outputs."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).parents[1] / "examples" / "quickstart.ipynb"


def test_the_notebook_is_stored_without_outputs():
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells
    assert all(not c["outputs"] and c["execution_count"] is None for c in cells), "clear the notebook's outputs"


def test_the_quickstart_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the test extra is not installed: pip install -e '.[test]'")
    nbclient = pytest.importorskip("nbclient", reason="the test extra is not installed: pip install -e '.[test]'")
    pytest.importorskip("transformer_lens", reason="its last part needs the tl extra: pip install -e '.[tl]'")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's temporary folder lands in this test's
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # a cell's error raises CellExecutionError, naming the cell and its traceback
    texts = [
        output.get("text") or output.get("data", {}).get("text/plain", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.get("name") != "stderr"
    ]
    shown = "\n".join(texts)
    assert "T_50" in shown and "w_KQ held" in shown, shown[-2000:]
    assert "nan" not in shown.lower() and "None" not in shown, shown[-2000:]
    exported = re.search(r"largest difference from our logits: (\S+)", shown)  # the TransformerLens export
    assert exported and float(exported.group(1)) < 1e-4, shown[-2000:]
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the run's figure and the pandas plot are shown"
