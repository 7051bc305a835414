"""Which namespaces a component acts in: upstream's `--vpa-object-namespace` (one, or all)
and `--ignored-vpa-object-namespaces`, one rule for the recommender, the updater and the
webhook, so a team can run kube-tailor for its own namespaces beside another VPA."""

from __future__ import annotations

from dataclasses import dataclass

from tailor.names import InvalidName, namespace_name


class ScopeError(ValueError):
    """A namespace name the API server would never hold, or a scope that excludes itself."""


def _checked(name: str) -> str:
    try:
        return namespace_name(name)
    except InvalidName as error:
        raise ScopeError(str(error)) from None


@dataclass(frozen=True)
class NamespaceScope:
    """All namespaces by default; `only` one of them; never those `ignored`."""

    only: str | None = None
    ignored: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, only: str | None, ignored: str | None) -> NamespaceScope:
        """From the flags' text: a name, and a comma-separated list (blanks ignored)."""
        names = frozenset(_checked(n.strip()) for n in (ignored or "").split(",") if n.strip())
        chosen = _checked(only) if only else None
        if chosen is not None and chosen in names:
            raise ScopeError(f"namespace {chosen!r} is both the only one and ignored")
        return cls(chosen, names)

    def includes(self, namespace: str) -> bool:
        if namespace in self.ignored:
            return False
        return self.only is None or namespace == self.only

    def describe(self) -> str:
        where = f"namespace {self.only}" if self.only else "all namespaces"
        return where + (f" but {', '.join(sorted(self.ignored))}" if self.ignored else "")


EVERYWHERE = NamespaceScope()

# Never resized nor evicted by the updater unless asked: the system's pods, and (added by
# the caller) the namespace kube-tailor itself runs in, whose pods it would otherwise
# restart while they serve.
SYSTEM_NAMESPACES = ("kube-system",)


def protected_namespaces(text: str | None, home: str) -> frozenset[str]:
    """The updater's `--protected-namespaces`: None gives kube-system and `home` (its own
    namespace); an empty text none at all."""
    if text is None:
        return frozenset((*SYSTEM_NAMESPACES, _checked(home)))
    return frozenset(_checked(n.strip()) for n in text.split(",") if n.strip())


def protecting(scope: NamespaceScope, protected: frozenset[str]) -> NamespaceScope:
    """`scope` that never includes `protected`; naming one of them as the only namespace is
    refused, since the scope would then hold nothing."""
    if scope.only is not None and scope.only in protected:
        raise ScopeError(
            f"namespace {scope.only!r} is protected: name it in --protected-namespaces "
            "(or pass --protected-namespaces='') to act there"
        )
    return NamespaceScope(scope.only, scope.ignored | protected)
