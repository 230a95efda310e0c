"""Energy, operational emissions and energy cost of a training run (SI floats or numpy arrays).

Units inside: watts, joules, seconds, kilograms of CO2-equivalent, US dollars;
a carbon intensity is kg CO2e per joule and an energy price USD per joule
(the public boundary converts "400 g/kWh" and "0.08 USD/kWh").

The accounting every published estimate uses (Patterson et al. 2021, "Carbon
Emissions and Large Neural Network Training", arXiv 2104.10350, section 2.5;
Touvron et al. 2023, "LLaMA", arXiv 2302.13971, section 6; the Llama 2, 3
and 3.1 model cards):

    energy    = hours x processors x average power per processor x PUE
    emissions = energy x grid carbon intensity   (location-based)

Power model (what "average power per processor" is made of). A device draws
``P_compute`` while it computes, ``P_comm`` while it waits on the network
(exposed communication: the arithmetic units idle, the links and memory
busy) and ``P_idle`` while it does nothing (a pipeline bubble, a restart, a
checkpoint write it waits on); its average over the run is the time-weighted
mean of the three (:func:`average_device_power`). The nodes add a constant
overhead (host CPUs, memory, NICs, fans) and the network its switches
(:func:`it_power`); the facility multiplies the IT power by its power usage
effectiveness (PUE = facility energy / IT energy; The Green Grid).

What the sources use for the power under load: the Llama model cards and the
LLaMA paper take the device's thermal design power (TDP: 400 W for an A100
SXM, 700 W for an H100 SXM) for every GPU-hour, and no separate host
overhead; Patterson et al. measured the whole system's average power per
accelerator, host included (V100: 330 W for GPT-3, above its 300 W TDP; TPU
v3: 245 to 310 W, below its 450 W TDP). The TDP is the upper bound a device
is designed to dissipate, not what it draws: measured 8-GPU H100 nodes
training Llama 2 13B peaked at about 8.4 kW, 18% below the node's 10.2 kW
rating (Latif et al. 2024, "Empirical Measurements of AI Training Power
Demand on a GPU-Accelerated Node", arXiv 2412.08602). By default every state
draws the power under load (the cards' convention); lower communication and
idle powers are inputs, with no invented default.

Embodied emissions (manufacturing) are amortised over the hardware's life in
proportion to the time the run holds it (Luccioni, Viguier and Ligozat 2023,
"Estimating the Carbon Footprint of BLOOM, a 176B Parameter Language Model",
JMLR 24(253), which adds them to the operational emissions).
"""

from __future__ import annotations

from mlsysim.physics._array import Num

JOULES_PER_KWH = 3.6e6
"""Joules in a kilowatt-hour."""

MAX_PUE = 10.0
"""Highest PUE a scenario accepts (published data centres report about 1.1-2; 10 is a
broken facility, not one to model)."""

EQUATIONS = {
    "average_device_power": (
        "P_dev = (P_compute t_compute + P_comm t_comm + P_idle t_idle) "
        "/ (t_compute + t_comm + t_idle)"
    ),
    "it_power": "P_IT = n_dev P_dev + n_nodes P_node + n_switches P_switch",
    "facility_energy": "E = P_IT T PUE  (Patterson et al. 2021, section 2.5)",
    "device_hours_energy": "E = device-hours x P x PUE  (Patterson et al. 2021; LLaMA, section 6)",
    "emissions": "CO2e = E x I  (location-based: I, the grid's average intensity)",
    "energy_cost": "cost = E x price",
    "embodied_share": "CO2e_embodied = C_embodied x T / (L u)  (Luccioni et al. 2023)",
    "run_energy": (
        "E = PUE [n_dev ((T_s + T_rework) P_update + (T_ckpt + T_restart) P_idle) "
        "+ (n_nodes P_node + n_switches P_switch) T_w]"
    ),
}
"""The equation of each function of this module, as explain prints it."""


def average_device_power(
    compute_power: Num,
    comm_power: Num,
    idle_power: Num,
    compute_time: Num,
    comm_time: Num,
    idle_time: Num,
) -> Num:
    """Time-weighted mean power of a device over an interval (watts).

    ``P_dev = (P_compute t_compute + P_comm t_comm + P_idle t_idle) / (t_compute + t_comm + t_idle)``.
    ``comm_time`` is the communication the device waits on (not hidden under
    computation; hidden communication runs while the device computes and is
    counted in ``compute_time``). With all three powers equal it is that power.
    """
    total = compute_time + comm_time + idle_time
    return (compute_power * compute_time + comm_power * comm_time + idle_power * idle_time) / total


def it_power(
    devices: Num,
    device_power: Num,
    nodes: Num = 0.0,
    node_overhead: Num = 0.0,
    switches: Num = 0.0,
    switch_power: Num = 0.0,
) -> Num:
    """Power of the IT equipment (watts): ``P_IT = n_dev P_dev + n_nodes P_node + n_switches P_switch``.

    ``node_overhead`` is what a node draws besides its accelerators (host CPUs,
    memory, NICs, fans, power-supply losses); ``switch_power`` what one switch
    of the network draws.
    """
    return devices * device_power + nodes * node_overhead + switches * switch_power


def facility_energy(it_power_w: Num, duration: Num, pue: Num = 1.0) -> Num:
    """Energy drawn by the facility (joules): ``E = P_IT T PUE``.

    Patterson et al. 2021, section 2.5: "KWh = Hours to train x Number of
    Processors x Average Power per Processor x PUE / 1000".
    """
    return it_power_w * duration * pue


def device_hours_energy(device_hours: Num, power: Num, pue: Num = 1.0) -> Num:
    """Energy of a run given as device-hours (joules): ``E = device-hours x P x PUE``.

    The form the LLaMA paper (section 6, "Wh = GPU-h x (GPU power
    consumption) x PUE") and the Llama model cards use; ``power`` in watts.
    """
    return device_hours * 3600.0 * power * pue


def emissions(energy: Num, carbon_intensity: Num) -> Num:
    """Operational emissions (kg CO2e), location-based: ``CO2e = E x I``.

    ``carbon_intensity`` in kg CO2e per joule: the average intensity of the
    grid where and when the run drew its energy. (Market-based accounting,
    which subtracts purchased carbon-free energy, gives zero for the Llama
    3.1 runs; it is a contract, not physics, and is not modelled.)
    """
    return energy * carbon_intensity


def energy_cost(energy: Num, price: Num) -> Num:
    """Cost of the energy (USD): ``cost = E x price``, the price in USD per joule."""
    return energy * price


def embodied_share(embodied: Num, duration: Num, lifetime: Num, use_share: Num = 1.0) -> Num:
    """The run's share of the hardware's manufacturing emissions (kg CO2e).

    ``CO2e_embodied = C_embodied x T / (L u)``: the hardware's embodied
    emissions ``C_embodied`` spread over the time it is in use over its
    lifetime ``L`` (``u`` the share of that lifetime it is in use), charged
    for the ``T`` seconds the run holds it (Luccioni et al. 2023).
    """
    return embodied * duration / (lifetime * use_share)


def run_energy(
    devices: Num,
    solve_time: Num,
    rework: Num,
    waiting: Num,
    update_power: Num,
    idle_power: Num,
    pue: Num = 1.0,
    other_power: Num = 0.0,
    wall_time: Num = 0.0,
) -> Num:
    """Energy of a run with failures (joules), composed once for the scenario and ``WholeRun``.

    ``E = PUE [n_dev ((T_s + T_rework) P_update + (T_ckpt + T_restart) P_idle) + P_other T_w]``:
    the devices draw ``update_power`` while they train or redo lost work and
    ``idle_power`` while they ``wait`` (checkpoint writes and restarts,
    ``T_ckpt + T_restart``); ``other_power`` (nodes' overhead and switches,
    :func:`it_power` of no devices) runs for the whole wall-clock time.
    """
    device_joules = devices * ((solve_time + rework) * update_power + waiting * idle_power)
    return (device_joules + other_power * wall_time) * pue
