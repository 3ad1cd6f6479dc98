"""The template-driven local gateway: template.yaml's routes through the real handlers.

``template`` reads the SAM template (routes, functions); ``lambda_emulation`` builds
what Lambda and API Gateway hand a handler (proxy events, the context) and imports a
function's code by path; ``dispatch`` turns one request into one invocation;
``http_server`` reads and writes HTTP/1.1; ``local_gateway`` is the lifecycle
(``LocalGateway``) and the command line.
"""
