"""Networks: the encoders (embeddings, character encoders, the word BiLSTM) and the taggers
that put a CRF on their emission scores."""
