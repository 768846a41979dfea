"""The headless front end.

parser (argparse -> RunOptions), headless (a run with the printer), printer (the
reference suite's lines, statistics and the comparison table), listing (--list),
trace_lines and ranks_report (parts of the printed summary). The `couplescope`
command itself (couplescope.frontends.command) dispatches here or to the app.
"""
