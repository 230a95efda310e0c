"""Write the collective and dispatch models' fitted constants (``mlsysim/data/kernel_fits/``).

``collectives.json``: the constants of :mod:`mlsysim.kernels.collectives`, fitted by
:func:`mlsysim.kernels.collective_fit.fit_collectives` on every shipped collective table whose
split is ``fit``; ``dispatch.json``: those of :mod:`mlsysim.kernels.dispatch`, fitted by
:func:`mlsysim.kernels.dispatch.fit_dispatch` on the shipped dispatch tables whose split is
``fit``. Each constant carries what it is, the tables it rests on and its bound; the holdout
tables are never read here (``benchmarks/bench_kernels_collectives.py`` checks them).

Run ``python -m mlsysim.validation.kernels_collectives`` after a change to the model or the
tables; ``tests/kernels/test_collective_fits.py`` fails while a stored file and a fresh fit differ.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from mlsysim.kernels.collective_fit import fit_collectives
from mlsysim.kernels.dispatch import fit_dispatch
from mlsysim.kernels.tables import tables

COLLECTIVE_ABOUT = (
    "Fitted constants of the collective model (mlsysim.kernels.collectives; equations in "
    "mlsysim.physics.collective_curves): t(S) = alpha + max(V_up / (e_up B_up), V_out / (e_out B_out)) / "
    "(x / (x + x_h))^g, fitted on the shipped nccl-tests tables of split 'fit' by python -m "
    "mlsysim.validation.kernels_collectives (robust least squares on log time, each table weighing the same). "
    "Efficiencies are fractions of the registry's nominal per-direction link rates, at most 1."
)
DISPATCH_ABOUT = (
    "Fitted constants of the expert dispatch/combine model (mlsysim.kernels.dispatch; equations in "
    "mlsysim.physics.expert_dispatch), fitted on the shipped dispatch tables of split 'fit' by python -m "
    "mlsysim.validation.kernels_collectives. Efficiencies are fractions of the registry's nominal per-direction "
    "NVLink and NIC rates, at most 1."
)


def _document(kind: str, about: str) -> dict[str, object]:
    """A fits file's contents: a fresh fit on the shipped tables of ``kind`` whose split is ``fit``."""
    fitted = list(tables(kind=kind, split="fit"))
    fit = fit_collectives(fitted) if kind == "collective" else fit_dispatch(fitted)
    return {
        "about": about,
        "tables": {t.name: t.source.cite() for t in fitted},
        "objective": round(fit.objective, 6),
        "constants": fit.constants.as_json(),
    }


def collective_document() -> dict[str, object]:
    """The contents of ``collectives.json``."""
    return _document("collective", COLLECTIVE_ABOUT)


def dispatch_document() -> dict[str, object]:
    """The contents of ``dispatch.json``."""
    return _document("dispatch", DISPATCH_ABOUT)


def text(document: dict[str, object]) -> str:
    """The stored form of a fits document (two-space JSON, a newline at the end)."""
    return json.dumps(document, indent=2) + "\n"


def main() -> None:
    folder = Path(str(files("mlsysim.data").joinpath("kernel_fits")))
    folder.mkdir(exist_ok=True)
    for name, document in (("collectives.json", collective_document()), ("dispatch.json", dispatch_document())):
        (folder / name).write_text(text(document), encoding="utf-8")
        print(f"wrote {folder / name}")


if __name__ == "__main__":
    main()
