"""The runner's pytest plugins: what turns a pytest run of the properties into a verdict.

* :mod:`.report`: the header, the summary, the closing verdict line and the JSON report.
* :mod:`.shrinking`: one shrink per distinct failure, within a budget.
* :mod:`.failure_list`: known findings an engine lists, strict in a complete run.
* :mod:`.seeding`: each property seeded from its test id (``--seed``).
* :mod:`.variant_coverage`: which schema variants this run drew (``--variant-coverage``).
* :mod:`.selection`: test ids and the command line that reruns a selection.

They see what the properties draw through :mod:`conformance.draws`, and share
nothing else but the pytest config.
"""
