"""attnbook: the machinery of the book *How softmax attention trains*, standing on ``attnlib``.

``attnlib`` holds the papers' algorithms; this package holds how the book computes, stores,
replays, judges and draws them. Import the submodules directly, e.g.
``from attnbook import experiments``:

``experiments``
    named, seeded runs, their stored histories and replays (``python -m attnbook.experiments
    NAME`` reruns one; the distributed runner needs the ``distributed`` extra);
``seeds``
    the random streams of the runs, one per purpose;
``chapters``
    what a chapter computes and its page in the Reproduction report re-checks, one module per
    chapter (no page executes another);
``verdicts``
    verdicts computed from measured numbers, with their thresholds, shown with their records;
``claims``
    each chapter's verdict rules, one module per chapter;
``ledger``, ``claim``
    the claims ledger written from the verdict records (``python -m attnbook.ledger``), and
    one claim re-decided (``python -m attnbook.claim ID``);
``plotting``, ``schematics``, ``tables``, ``slider``
    the book's figure style, the schematics of Main results, result tables as HTML and aligned
    text, and interactive figures that work without a kernel (the live control needs
    ipywidgets).

Nothing in ``attnlib`` imports this package.
"""

__version__ = "0.2.0"
