"""Figures of the similarity engine (analogues of seed 002's Figures 3, 5, 6, 7 and Tables 1, 5–7).

Every function returns a matplotlib Figure; callers save or embed it.  Per-application figures are meant
for up to a few hundred applications (see ``results.PLOT_LIMIT``).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

_REF_COLOR = "#d62728"


def _cluster_colors(k: int):
    cmap = plt.get_cmap("tab20")
    return [cmap(i % 20) for i in range(k)]


def signatures(res, ax=None):
    """Signature bars: one group per application, one bar per stall (Table 1 / Figure 4 view)."""
    n, m = res.signatures.shape
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(6.0, 0.55 * n + 2), 3.8))
    width = 0.8 / m
    x = np.arange(n)
    colors = plt.get_cmap("tab10")
    for j, stall in enumerate(res.stalls):
        ax.bar(x - 0.4 + width * (j + 0.5), res.signatures[:, j], width, label=stall, color=colors(j % 10))
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(res.applications, rotation=60, ha="right", fontsize=8)
    for lab in ax.get_xticklabels():
        if lab.get_text() == res.reference:
            lab.set_color(_REF_COLOR)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("Pearson r(CPI, stall ratio)")
    ax.set_title(f"Signatures on {res.platform}")
    ax.legend(fontsize=7, ncol=min(m, 5), loc="lower center", bbox_to_anchor=(0.5, 1.08), frameon=False)
    fig.tight_layout()
    return fig


def similarity_heatmap(res, order: str = "cluster"):
    """The similarity matrix (Tables 5–7) as a heat map, applications in hierarchy or table order."""
    idx = res.hierarchy.order if order == "cluster" else np.arange(res.n)
    sim = res.similarity[np.ix_(idx, idx)]
    size = min(14.0, max(4.5, 0.42 * res.n + 2))
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(sim, cmap="RdBu_r", vmin=-1, vmax=1)
    names = [res.applications[i] for i in idx]
    ax.set_xticks(range(res.n))
    ax.set_yticks(range(res.n))
    fs = 8 if res.n <= 40 else 5
    ax.set_xticklabels(names, rotation=90, fontsize=fs)
    ax.set_yticklabels(names, fontsize=fs)
    if res.n <= 20:
        for a in range(res.n):
            for b in range(res.n):
                ax.text(b, a, f"{sim[a, b]:.1f}".replace("-0.0", "0.0"), ha="center", va="center", fontsize=7,
                        color="white" if abs(sim[a, b]) > 0.6 else "black")
    fig.colorbar(im, ax=ax, shrink=0.8, label="Kendall tau" if res.method == "kendall" else "Spearman rho")
    ax.set_title(f"Similarity on {res.platform}")
    fig.tight_layout()
    return fig


def tree_layout(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Layered layout of a tree: rooted at its centre, leaves spread evenly, parents over their children."""
    adj = [[] for _ in range(n)]
    for x, y in zip(a, b):
        adj[int(x)].append(int(y))
        adj[int(y)].append(int(x))

    def bfs(src):
        dist = [-1] * n
        dist[src] = 0
        queue = [src]
        for u in queue:
            for v in adj[u]:
                if dist[v] < 0:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        return dist, queue

    d0, _ = bfs(0)
    far = int(np.argmax(d0))
    d1, _ = bfs(far)
    other = int(np.argmax(d1))
    d2, _ = bfs(other)
    root = int(np.argmin([max(p, q) for p, q in zip(d1, d2)]))  # a centre of the tree
    depth, visit = bfs(root)
    children = [[] for _ in range(n)]
    for u in visit[1:]:
        parent = min((v for v in adj[u] if depth[v] == depth[u] - 1))
        children[parent].append(u)
    pos = np.zeros((n, 2))
    cursor = [0.0]

    def place(u):
        stack = [(u, False)]
        while stack:
            v, done = stack.pop()
            if done or not children[v]:
                if children[v]:
                    pos[v, 0] = np.mean([pos[c, 0] for c in children[v]])
                else:
                    pos[v, 0] = cursor[0]
                    cursor[0] += 1.0
                pos[v, 1] = -depth[v]
                continue
            stack.append((v, True))
            for c in reversed(children[v]):
                stack.append((c, False))

    place(root)
    return pos


def _draw_tree(ax, res, pos, removed_step: int | None = None, labels: bool = True, edge_labels: bool = True):
    colors = _cluster_colors(res.clustering.n_clusters)
    steps = res.cut_edge_step
    for e, (x, y, w) in enumerate(zip(res.tree.a, res.tree.b, res.tree.weight)):
        cut = steps[e] > 0 and (removed_step is None or steps[e] <= removed_step)
        style = dict(color=_REF_COLOR, ls="--", lw=1.0, alpha=0.8) if cut else dict(color="#555", lw=1.2)
        if cut and removed_step is not None:
            style = dict(color="#bbb", ls=":", lw=0.8)
        ax.plot(pos[[x, y], 0], pos[[x, y], 1], zorder=1, **style)
        if edge_labels and res.n <= 60:
            text = f"{w:.2g}" + (f" [{steps[e]}]" if steps[e] and removed_step is None else "")
            ax.text(pos[[x, y], 0].mean(), pos[[x, y], 1].mean(), text, fontsize=6, color="#333",
                    ha="center", va="center", bbox=dict(fc="white", ec="none", pad=0.1, alpha=0.8))
    lab = res.clustering.labels
    ax.scatter(pos[:, 0], pos[:, 1], c=[colors[k] for k in lab], s=90, zorder=2, edgecolors="k", linewidths=0.5)
    if res.reference is not None:
        r = res.index[res.reference]
        ax.scatter([pos[r, 0]], [pos[r, 1]], marker="*", s=260, c=_REF_COLOR, zorder=3)
    if labels and res.n <= 80:
        for i, name in enumerate(res.applications):
            ax.annotate(name, pos[i], xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])
    for s in ax.spines.values():
        s.set_visible(False)


def mst(res):
    """The minimum spanning tree (Figure 5); edges labelled with their distance and, in brackets, the
    Algorithm 1 step that cut them (dashed), nodes coloured by final cluster (Figure 6)."""
    pos = tree_layout(res.n, res.tree.a, res.tree.b)
    width = min(16.0, max(6.0, 0.6 * (pos[:, 0].max() + 1)))
    fig, ax = plt.subplots(figsize=(width, 1.1 * (-pos[:, 1].min() + 1) + 1.5))
    _draw_tree(ax, res, pos)
    ax.set_title(f"MST on {res.platform}: distance 1 - rho [cut at step], g = {res.threshold:g}, "
                 f"{res.clustering.n_clusters} clusters")
    fig.tight_layout()
    return fig


def cut_steps(res, max_panels: int = 8):
    """Step-by-step recursive maximum-edge cuts (Figure 6): the forest after each step."""
    steps = res.clustering.steps
    shown = list(range(0, min(len(steps), max_panels - 1) + 1))
    pos = tree_layout(res.n, res.tree.a, res.tree.b)
    cols = min(len(shown), 3)
    rows = int(np.ceil(len(shown) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.set_axis_off()
    for ax, s in zip(axes.ravel(), shown):
        ax.set_axis_on()
        _draw_tree(ax, res, pos, removed_step=s, labels=res.n <= 40, edge_labels=False)
        title = "MST" if s == 0 else f"after step {s}: cut at {steps[s - 1].weight:.3g} (depth {steps[s - 1].depth})"
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"Algorithm 1 on {res.platform} (g = {res.threshold:g}, stop rule '{res.stop_rule}')")
    fig.tight_layout()
    return fig


def linkage_matrix(hierarchy) -> np.ndarray:
    """scipy linkage matrix of the cut hierarchy (a k-way cut becomes k-1 merges at the same height)."""
    h = hierarchy
    n = h.n
    ident = {i: i for i in range(n)}
    size = {i: 1 for i in range(n)}
    rows = []
    for node in range(n, len(h.children)):
        kids = h.children[node]
        cur = ident[kids[0]]
        cur_size = size[kids[0]]
        for c in kids[1:]:
            cur_size += size[c]
            rows.append([cur, ident[c], h.weight[node], cur_size])
            cur = n + len(rows) - 1
        ident[node] = cur
        size[node] = cur_size
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def dendrogram(res):
    """Cluster view (Figure 7): the maximum-edge-cut hierarchy as a dendrogram; links inside one
    Algorithm 1 cluster in that cluster's colour, the reference in red and its Algorithm 2 cluster bold."""
    from scipy.cluster.hierarchy import dendrogram as scipy_dendrogram

    z = linkage_matrix(res.hierarchy)
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.35 * res.n + 2)), 4.5))
    if len(z) == 0:
        ax.text(0.5, 0.5, "one application", ha="center")
        return fig
    labels = res.clustering.labels
    colors = _cluster_colors(res.clustering.n_clusters)
    n = res.n
    members = {i: {i} for i in range(n)}
    for i, row in enumerate(z):
        members[n + i] = members[int(row[0])] | members[int(row[1])]

    def link_color(k):
        labs = {labels[m] for m in members[k]}
        if len(labs) == 1:
            c = colors[labs.pop()]
            return matplotlib.colors.to_hex(c)
        return "#999999"

    scipy_dendrogram(z, labels=list(res.applications), link_color_func=link_color, ax=ax, leaf_rotation=90,
                     leaf_font_size=8 if n <= 60 else 5)
    ax.axhline(res.threshold, color="k", ls=":", lw=0.8)
    ax.text(ax.get_xlim()[1], res.threshold, f" g = {res.threshold:g}", va="center", fontsize=8)
    ref_cluster = set(res.reference_cluster or [])
    for lab in ax.get_xticklabels():
        if lab.get_text() == res.reference:
            lab.set_color(_REF_COLOR)
        if lab.get_text() in ref_cluster:
            lab.set_fontweight("bold")
    ax.set_ylabel("cut distance 1 - rho")
    ax.set_title(f"Cut hierarchy on {res.platform}" + (f"; Algorithm 2 cluster of {res.reference} in bold"
                                                       if res.reference else ""))
    fig.tight_layout()
    return fig


def time_series(results, application: str):
    """CPI and stall-ratio series of one application on each platform (Figure 3)."""
    s = results.series
    if s is None:
        raise ValueError("no time series: the results were computed from signatures")
    s = s[s["application"] == application]
    plats = list(dict.fromkeys(s["platform"]))
    if not plats:
        raise ValueError(f"no time series for application {application!r}")
    fig, axes = plt.subplots(len(plats), 1, figsize=(8, 2.6 * len(plats)), squeeze=False)
    for ax, p in zip(axes[:, 0], plats):
        block = s[s["platform"] == p]
        stalls = list(results.platforms[p].stalls) if p in results.platforms else []
        t = block["t_start"].to_numpy()
        ax.plot(t, block["cpi"], color="k", lw=1.6, label="CPI")
        ax.set_ylabel("CPI")
        ax2 = ax.twinx()
        for j, st in enumerate(stalls):
            ax2.plot(t, block[st], lw=0.9, label=st, color=plt.get_cmap("tab10")(j % 10))
        ax2.set_ylabel("stall cycles / cycles")
        ax.set_title(f"{application} on {p}", fontsize=9)
        lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        ax.legend(lines, [ln.get_label() for ln in lines], fontsize=6, ncol=3, loc="upper right")
    axes[-1, 0].set_xlabel("interval start (s)")
    fig.tight_layout()
    return fig
