"""Admin web UI: a Flask app (``create_app``) over a ``MirrorControl``, served by waitress.

``mirror run`` builds a ``ControlCore`` over its frame processor and telemetry,
then ``create_app(control)`` and ``serve(app, host, port, tls=...)`` in the same
process (HTTPS by default: ``web_ui.front`` owns the port and hands connections to
waitress, in background threads; see ``web_ui.server``).
"""
