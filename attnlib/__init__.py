"""attnlib: the algorithms of the book *How softmax attention trains*.

Import the submodules directly, e.g. ``from attnlib import attention``. Every public module
(the library's API reference, ``book/api.md``, documents each from its docstrings):

Part I (Goel, Soltanolkotabi, Bartlett 2026)
    ``data`` (covariances and the regression sampler), ``attention`` (the softmax layer, its
    loss and exact gradient, blocked over query rows), ``symbolic`` (the infinite-data limit,
    derived with sympy), ``population`` (closed-form loss, factorization coordinates, OLS),
    ``geometry`` (the manifold S, the P-geometry, Hessians), ``landscape`` (stationary points,
    one-point conditions), ``algorithm`` (Algorithm 1 and its baselines), ``optim`` (gradient
    transformations with optax's contract), ``reference`` (certified reference optima),
    ``orbit`` (the orbit of minimizers at finite n: its tangent, its curvature, methods
    compared on it), ``prompts`` (the many-prompts reconstruction), ``analysis`` (summaries
    of histories), ``fitting`` (power-law and geometric rate fits).
Part II (Frangi, Mukherjee, Kumar, Sun, Sun 2026)
    ``potentials`` (test potentials), ``regularizers`` (weight decay, log-amplified,
    super-quadratic), ``villani`` (Villani diagnostics), ``langevin`` (Langevin dynamics and
    Gibbs measures), ``lora`` (LoRA on a depth-2 net), ``qk_attention`` (attention trained in
    W_Q, W_K), ``darcy`` (Darcy-flow data and solver), ``vit`` (the one-attention-layer ViT).
Part III
    ``bridge`` (Part I's regression trained by Part II's Langevin dynamics).
Research tools
    ``sweep`` (a function over a grid of settings, serially or on Dask workers, as a table),
    ``runs`` (save a training run or a chain to a file of the user's and load it back).

attnlib needs numpy and scipy only; ``symbolic`` needs sympy (the ``symbolic`` extra), progress
bars tqdm (``progress``), one BLAS thread per attention block threadpoolctl (``threads``),
sweeps on worker processes and as tables Dask and pandas (``sweep``), the fused kernel of
``attention.loss_and_grad`` numba (``fast``: chosen automatically when installed;
``ATTNLIB_KERNEL=0`` turns it off). It never imports the book's own package, ``attnbook`` (stored runs, verdicts, figures), which
stands on it.
"""

__version__ = "0.2.0"
