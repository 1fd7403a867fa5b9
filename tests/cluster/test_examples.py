"""examples/cluster/ray_predict.py and spark_predict.py on a local cluster write the same bytes
as ``crftag predict --format jsonl`` on 2,603 lines. Run by ``make test-cluster`` (marker
``cluster``); each skips where its engine (and for Spark, Java) is not installed."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster


def run_example(script: str, texts, output, *options: str) -> None:
    # A script's folder, not the working one, starts its path: crftag is this checkout's.
    paths = [os.getcwd(), *filter(None, [os.environ.get("PYTHONPATH")])]
    done = subprocess.run(
        [sys.executable, script, str(texts), str(output), "-m", "en-ner", *options],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""  # messages go to stderr


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_ray_example_writes_predicts_records(cluster_texts, tmp_path):
    texts, expected = cluster_texts
    output = tmp_path / "ray.jsonl"
    run_example("examples/cluster/ray_predict.py", texts, output, "--actors", "2")
    assert output.read_text(encoding="utf-8") == expected


@pytest.mark.skipif(
    importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
    reason="pyspark or Java is not installed",
)
def test_spark_example_writes_predicts_records(cluster_texts, tmp_path):
    texts, expected = cluster_texts
    output = tmp_path / "spark.jsonl"
    run_example("examples/cluster/spark_predict.py", texts, output, "--master", "local[2]")
    assert output.read_text(encoding="utf-8") == expected
