"""Help texts shared by the commands."""

FILE_HELP = "Read the scenario from a TOML or YAML file instead of naming one."
SET_HELP = (
    "Override a field: FIELD=VALUE, repeatable. Units as text ('inter_bandwidth=100 Gbps'), "
    "workloads by registry name ('workload=Llama2_7B'), 'assumptions=realistic', "
    "'assumptions.overlap=true', 'none' clears an optional field."
)
