"""What setting up a session costs, per configuration and link (the `pq` study's figure,
docs/post-quantum.md): the bytes the emitter's TLS handshake and payload key exchange put on
the wire each way, and the time the four set-up phases take. Post-quantum key shares,
ciphertexts and ML-DSA certificate chains are kilobytes where classical ones are tens of
bytes: on a LoRa-rate link that is seconds.

It reads the summary's set-up bytes and phase columns (analysis.metrics); an experiment
with a single configuration on a single link, or one that stored no set-up bytes, has no
comparison to draw and the figure is left out.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from iotsecbench.analysis.metrics import MEASURED, PHASE_COLUMNS, SETUP_BYTES_IN, SETUP_BYTES_OUT
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure, _finish, log_scale
from iotsecbench.report.style import Palette, plt, styled


@styled
def session_setup(data: ReportData, palette: Palette) -> ReportFigure | None:
    summary, runs = data.summary, data.runs
    if summary is None or runs is None or SETUP_BYTES_OUT not in summary:
        return None
    frame = summary.dropna(subset=[SETUP_BYTES_OUT])
    if len(frame) < 2:
        return None
    link = frame["configuration"].map(runs.groupby("cell_label")["network"].first())
    frame = frame.assign(
        # the cell's label without its link: one row per cell of the other factors
        family=[
            " · ".join(part for part in label.split(" · ") if part != network)
            for label, network in zip(frame["configuration"], link, strict=True)
        ],
        link=link,
        setup_time=sum(frame[c].fillna(0.0) for c in PHASE_COLUMNS if c in frame),
    )
    families = list(dict.fromkeys(frame["family"]))
    links = list(dict.fromkeys(frame["link"]))
    height = 0.8 / len(links)
    figure, (bytes_axis, time_axis) = plt.subplots(
        1, 2, figsize=(10.0, 0.42 * len(families) * max(1, len(links) / 1.5) + 2.0), sharey=True
    )
    shades = plt.get_cmap("viridis")(np.linspace(0.15, 0.8, len(links)))
    positions = np.arange(len(families))
    for index, link in enumerate(links):
        rows = frame[frame["link"] == link].set_index("family").reindex(families)
        y = positions + (index - (len(links) - 1) / 2) * height
        sent, received = rows[SETUP_BYTES_OUT].to_numpy(), rows[SETUP_BYTES_IN].to_numpy()
        bytes_axis.barh(y, sent, height, color=shades[index], label=f"{link}: sent")
        bytes_axis.barh(y, received, height, left=sent, color=shades[index], alpha=0.45,
                        label=f"{link}: received")  # fmt: skip
        time_axis.barh(y, rows["setup_time"].to_numpy(), height, color=shades[index], label=link)
    bytes_axis.set_yticks(positions, families)
    bytes_axis.invert_yaxis()
    bytes_axis.set_xlabel("set-up bytes: sent | received")
    bytes_axis.xaxis.set_major_locator(MaxNLocator(5))
    time_axis.set_xlabel("set-up time (ms, all phases)")
    if frame["setup_time"].max() > 20 * max(frame["setup_time"].min(), 1e-3):
        log_scale(time_axis, "x")
    bytes_axis.legend(
        fontsize=7, ncol=min(4, 2 * len(links)), loc="upper center",
        bbox_to_anchor=(1.0, -0.18), frameon=False,
    )  # fmt: skip
    return _finish(
        "session-setup",
        "Session set-up per configuration and link: bytes and time",
        "Bytes the emitter's TLS handshake (TCP_INFO) and payload key exchange (its three "
        "messages) put on the wire, sent and received, and the mean wall time of the set-up "
        "phases, per link. Post-quantum key shares and ML-DSA chains are kilobytes: on a "
        "slow link they are the set-up time.",
        MEASURED,
        figure,
    )


BUILDERS = (session_setup,)
