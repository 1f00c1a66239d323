"""Admin web UI: a Flask app (``create_app``) over a ``MirrorControl``, served by waitress.

``mirror run`` builds a ``ControlCore`` over its frame processor and telemetry,
then ``create_app(control)`` and ``serve(app, host, port)`` in the same process
(waitress runs in a background thread; see ``web_ui.server``).
"""
