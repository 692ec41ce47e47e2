"""What a chapter computes and its Reproduction report re-checks, one home per function.

A chapter notebook calls these functions to build its objects (problems, minimizers, runs,
measurements) and shows the results; its page in the Reproduction report
(``notebooks/report_<chapter>.ipynb``) imports and calls the same functions instead of
re-executing the chapter, as d2l's ``#@save`` gives its book one home per function. One
module per chapter (``chNN``); the verdict rules stay in :mod:`attnbook.claims`.
"""

__all__: list[str] = []
