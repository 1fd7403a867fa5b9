"""``crftag serve``: the tagger behind HTTP, loaded once, micro-batching concurrent requests.

``requests`` reads and checks a request body, ``batcher`` gathers concurrent requests into
batches for one tagging thread, ``metrics`` counts for ``/metrics``, ``app`` is the ASGI
application, ``server`` runs it under uvicorn ([docs/serve.md](../../docs/serve.md)).
"""
