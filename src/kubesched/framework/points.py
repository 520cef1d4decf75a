"""A profile's plugins at each extension point, and what is derived from them once (`ExtensionPoints`).

`Framework` (runtime.py) runs them; this module only orders and classifies them: the per-point lists,
every plugin once, the Filter stages, the signers, which Score plugins normalize, the Node fields read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from kubesched.api.node_fields import NodeFields
from kubesched.framework.events import Registrations, registrations
from kubesched.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.observer import Observer
from kubesched.framework.profile import BuiltPlugin, ProfileSpec, instantiate
from kubesched.framework.registry import Registry
from kubesched.framework.stages import FilterStages


class ExtensionPoints:
    """A profile's plugins at each extension point, in the order they run there (what `Framework` runs).

    Built from the ordered per-point lists (framework/build.py expands a configured profile into them);
    `Framework.build` puts every plugin of a flat `ProfileSpec` at each point it implements.
    ``plugins`` is every plugin once, in profile order (default: in order of first appearance).
    """

    def __init__(
        self,
        spec: ProfileSpec,
        *,
        pre_enqueue: Sequence[PreEnqueuePlugin] = (),
        queue_sort: Sequence[QueueSortPlugin] = (),
        pre_filter: Sequence[PreFilterPlugin] = (),
        filter: Sequence[FilterPlugin] = (),
        post_filter: Sequence[PostFilterPlugin] = (),
        pre_score: Sequence[PreScorePlugin] = (),
        score: Sequence[tuple[ScorePlugin, int]] = (),
        reserve: Sequence[ReservePlugin] = (),
        permit: Sequence[PermitPlugin] = (),
        pre_bind: Sequence[PreBindPlugin] = (),
        bind: Sequence[BindPlugin] = (),
        post_bind: Sequence[PostBindPlugin] = (),
        plugins: Sequence[Plugin] | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.spec = spec
        # Told of every plugin call (`observer.Observer`); None, the default, costs one test per call.
        self.observer = observer
        self.pre_enqueue = list(pre_enqueue)
        self.queue_sort = list(queue_sort)
        self.pre_filter = list(pre_filter)
        self.filter = list(filter)
        self.post_filter = list(post_filter)
        self.pre_score = list(pre_score)
        self.score = list(score)
        self.reserve = list(reserve)
        self.permit = list(permit)
        self.pre_bind = list(pre_bind)
        self.bind = list(bind)
        self.post_bind = list(post_bind)
        if plugins is None:
            every: list[Plugin] = [*self.pre_enqueue, *self.queue_sort, *self.pre_filter, *self.filter]
            every += [*self.post_filter, *self.pre_score, *(p for p, _ in self.score), *self.reserve]
            every += [*self.permit, *self.pre_bind, *self.bind, *self.post_bind]
            plugins = list(dict.fromkeys(every))
        self.plugins = list(plugins)
        # What follows is derived once from the lists above (they are not changed afterwards).
        self._filters = FilterStages(self.filter)
        self._extensions = [p for p in self.pre_filter if isinstance(p, PreFilterExtensions)]  # preemption's
        self._stages = self._filters.stages
        # kube-scheduler's scheduler_plugin_evaluation_total: the pods (PreFilter, PreScore) or nodes (Filter,
        # Score) each plugin ran for, by (plugin, point); zero from the start, as upstream registers them.
        self.evaluations: dict[tuple[str, str], int] = {}
        for point, every_plugin in (
            ("PreFilter", self.pre_filter),
            ("Filter", self.filter),
            ("PreScore", self.pre_score),
            ("Score", [p for p, _ in self.score]),
        ):
            self.evaluations.update(((p.name, point), 0) for p in every_plugin)
        # The keys, made once (a tuple built per call would cost more than the count).
        self._pre_filter_keys = [(p.name, "PreFilter") for p in self.pre_filter]
        self._filter_keys = {id(p): (p.name, "Filter") for p in self.filter}
        self._pre_score_keys = [(p.name, "PreScore") for p in self.pre_score]
        self._score_keys = [(p.name, "Score") for p, _ in self.score]
        # Opportunistic batching needs every plugin that filters or scores to sign pods (as upstream).
        deciders = list(dict.fromkeys([*self.pre_filter, *self.filter, *self.pre_score, *(p for p, _ in self.score)]))
        self.signers: list[SignPlugin] | None = (
            [p for p in deciders if isinstance(p, SignPlugin)]
            if all(isinstance(p, SignPlugin) for p in deciders)
            else None
        )
        # Score plugins with a NormalizeScore of their own (their scores depend on the other candidates).
        self.normalizes = [type(p).normalize is not ScorePlugin.normalize for p, _ in self.score]
        self._sign_key = object()  # where this framework keeps a pod's signature in PodInfo.cache
        signers = self.signers or []
        self._static_signers = [p for p in signers if p.signs_statically()]
        self._dynamic_signers = [p for p in signers if not p.signs_statically()]

    @classmethod
    def of(cls, spec: ProfileSpec, built: Sequence[BuiltPlugin], observer: Observer | None = None) -> Self:
        """Every plugin at each extension point it implements, in profile order."""
        plugins = [b.plugin for b in built]
        return cls(
            spec,
            pre_enqueue=[p for p in plugins if isinstance(p, PreEnqueuePlugin)],
            queue_sort=[p for p in plugins if isinstance(p, QueueSortPlugin)],
            pre_filter=[p for p in plugins if isinstance(p, PreFilterPlugin)],
            filter=[p for p in plugins if isinstance(p, FilterPlugin)],
            post_filter=[p for p in plugins if isinstance(p, PostFilterPlugin)],
            pre_score=[p for p in plugins if isinstance(p, PreScorePlugin)],
            score=[(b.plugin, b.weight) for b in built if isinstance(b.plugin, ScorePlugin)],
            reserve=[p for p in plugins if isinstance(p, ReservePlugin)],
            permit=[p for p in plugins if isinstance(p, PermitPlugin)],
            pre_bind=[p for p in plugins if isinstance(p, PreBindPlugin)],
            bind=[p for p in plugins if isinstance(p, BindPlugin)],
            post_bind=[p for p in plugins if isinstance(p, PostBindPlugin)],
            plugins=plugins,
            observer=observer,
        )

    @classmethod
    def build(
        cls,
        spec: ProfileSpec,
        registry: Registry,
        handle: Handle | None = None,
        path: str = "",
        observer: Observer | None = None,
    ) -> Self:
        """Validate a flat profile and build its plugins (`of`); raises ConfigurationError with every problem."""
        return cls.of(spec, instantiate(spec, registry, handle, path), observer)

    def node_fields(self) -> NodeFields | None:
        """The Node fields the node-reading plugins need together (None: the whole partial Node)."""
        fields = NodeFields()
        readers = [
            p for p in self.plugins if isinstance(p, (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin))
        ]
        for plugin in readers:
            if plugin.node_fields is None:
                return None
            fields = fields.union(plugin.node_fields)
        return fields

    def observed(self, observer: Observer | None) -> Self:
        """The same plugins at the same points, each call told to ``observer`` (a new framework)."""
        return type(self)(
            self.spec,
            pre_enqueue=self.pre_enqueue,
            queue_sort=self.queue_sort,
            pre_filter=self.pre_filter,
            filter=self.filter,
            post_filter=self.post_filter,
            pre_score=self.pre_score,
            score=self.score,
            reserve=self.reserve,
            permit=self.permit,
            pre_bind=self.pre_bind,
            bind=self.bind,
            post_bind=self.post_bind,
            plugins=self.plugins,
            observer=observer,
        )

    def registered_events(self) -> dict[str, tuple[Plugin, Registrations | None]]:
        """Every plugin by name with the cluster events it registered (`events_to_register`; None: none)."""
        return {p.name: (p, registrations(p.events_to_register())) for p in self.plugins}
