"""Write docs/examples/cluster_runs.csv: 10 SYNTHETIC runs of an imagined cluster.

Not measurements. Each run's update time is the model's prediction under the realistic
preset with the constants of the imagined cluster (TRUE below) times a random factor
exp(N(0, NOISE)) standing for run-to-run noise, so that `mlsysim validate mine` can be
tried and checked against the constants it should recover:

    python docs/examples/make_cluster_runs.py
    mlsysim validate mine docs/examples/cluster_runs.csv --out my_cluster.toml
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models

TRUE = {"intra_efficiency": 0.70, "inter_efficiency": 0.60, "update_overhead": Q_(4.0, "ms")}
NOISE = 0.02
LAYOUTS = [  # (devices per node, nodes, NICs per node, accumulation)
    (2, 1, None, 1),
    (4, 1, None, 1),
    (8, 1, None, 1),
    (8, 1, None, 4),
    (8, 2, 1, 1),
    (8, 2, 4, 1),
    (8, 4, 4, 1),
    (8, 4, 4, 4),
    (8, 8, 4, 1),
    (8, 16, 4, 2),
]
STEP, BATCH, INTRA, INTER = "120 ms", 8, "150 GB/s", "100 Gbps"


def main() -> None:
    rng = np.random.default_rng(23)
    truth = Assumptions.realistic().variant(**TRUE)
    rows = []
    for d, n, nics, acc in LAYOUTS:
        scenario = DataParallelScaleOutScenario(
            workload=Models.Language.GPT2,
            precision="fp16",
            step_time=Q_(120, "ms"),
            training_time=Q_(1, "hour"),
            per_device_batch=BATCH,
            devices_per_node=d,
            nodes=n,
            intra_bandwidth=Q_(150, "GB/s"),
            inter_bandwidth=Q_(100, "Gbps") if n > 1 else None,
            nics_per_node=nics,
            accumulation_steps=acc,
            assumptions=truth,
        )
        u = scenario.result.update_time.to("ms").magnitude * float(np.exp(rng.normal(0, NOISE)))
        rows.append(
            {
                "name": f"{d}x{n}" + (f"-acc{acc}" if acc > 1 else "") + (f"-{nics}nic" if nics else ""),
                "workload": "GPT2",
                "precision": "fp16",
                "step_time": STEP,
                "per_device_batch": BATCH,
                "devices_per_node": d,
                "nodes": n,
                "intra_bandwidth": INTRA,
                "inter_bandwidth": INTER if n > 1 else "",
                "nics_per_node": nics or "",
                "accumulation_steps": acc,
                "measured_update_time": f"{u:.1f} ms",
            }
        )
    out = Path(__file__).with_name("cluster_runs.csv")
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
