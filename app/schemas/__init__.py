"""The API's request and response shapes, declared once: the API (agentlasso.api) speaks them,
the pages (agentlasso.web) read the same requests, and the public client (agentlasso.client)
decodes the same answers. msgspec and the pure domain only, so a CI machine can import them."""
