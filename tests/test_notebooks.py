"""Every lesson and every solution notebook runs top to bottom in a real Jupyter kernel (CI proves the
lessons still tell the truth: their asserts compare torch with minigrad)."""
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "course").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path):
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
