"""benchmarks/your_data.py's encoder rows (``--transformer``): the scratch config with the
encoder beside GloVe, without it, and fine-tuned; none of them joins the ``all`` row."""


def test_the_encoder_rows_change_only_the_encoder_and_the_vectors(load_benchmark, tmp_path):
    your_data = load_benchmark("your_data")
    folder = tmp_path / "encoder"
    configs = your_data.row_configs("btc", str(tmp_path), transformer=str(folder), finetune=True)
    scratch = configs["scratch"]
    encoder = {"transformer": str(folder), "transformer_layers": 4, "transformer_pooling": "mean"}
    assert configs["encoder"] == dict(scratch, model=scratch["model"] | encoder)
    alone = configs["encoder_only"]
    assert alone["model"] == scratch["model"] | encoder | {"embeddings": None}
    assert alone["vocab"] == scratch["vocab"] | {"embedding_words": 0}
    assert alone["data"] == scratch["data"] and alone["train"] == scratch["train"]
    tuned = configs["encoder_finetuned"]
    assert tuned["model"] == configs["encoder"]["model"] | {"transformer_finetune": True}
    assert tuned["train"] == scratch["train"] | {"epochs": 8}
    assert "encoder_finetuned" not in your_data.row_configs(
        "btc", str(tmp_path), transformer=str(folder)
    )
    assert "all" not in configs and "encoder" not in your_data.row_configs("btc", str(tmp_path))
