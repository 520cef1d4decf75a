"""HTTP plumbing the server shells share (the extender, the webhook).

`handler`: what a shell provides (a `Handler`: routes a request to a response) and the request body
under its size limit (`Body`, the one place that limit is checked); `server`: the lean HTTP/1.1
server (asyncio protocol + httptools) with its `Limits`; `asgi`: the same handlers as ASGI apps.
"""
