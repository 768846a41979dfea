"""The parent's orchestration, free of argparse and Textual.

request (RunOptions -> RunRequest: variants, names, refusals), presets, validation,
availability (what can run here), runner (a worker process), session (variants ->
events -> listeners), replay (a recorded run played back), pipeline (the one place
listeners are attached), telemetry/ (watching the worker from outside). Never imports
the worker side: the contract between them is couplescope.protocol.
"""
