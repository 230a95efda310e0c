"""Help texts shared by the commands."""

FILE_HELP = "Read the scenario from a TOML or YAML file instead of naming one."
SET_HELP = (
    "Override a field: FIELD=VALUE, repeatable. Units as text ('inter_bandwidth=100 Gbps'), "
    "workloads by registry name ('workload=Llama2_7B'), 'assumptions=realistic', "
    "'assumptions.overlap=true', 'none' clears an optional field."
)

REGISTRY_GROUPS = ("models", "accelerators", "nodes", "fabrics", "prices", "grids", "failures")
"""The groups ``mlsysim registry`` lists, in its order (every kind of the registry's catalog)."""
KERNEL_GROUP = "kernels"
"""The group of ``mlsysim registry`` that lists the shipped kernel tables (after the catalog's kinds)."""
REGISTRY_GROUP_HELP = f"{', '.join(REGISTRY_GROUPS)} or {KERNEL_GROUP} (default: all)."

FORCE_HELP = "Replace read-only output files."
