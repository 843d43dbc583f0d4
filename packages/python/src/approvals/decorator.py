"""``@requires_approval``: a plain function that runs only once a person (or a rule) approved it."""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable, Dict, Mapping, Optional, TypeVar, cast

from .client import DEFAULT_WAIT_SECONDS, AgentIdentity, Client
from .errors import NotApproved

__all__ = ["requires_approval", "call_arguments"]

F = TypeVar("F", bound=Callable[..., Any])


def call_arguments(function: Callable[..., Any], args: tuple, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments of one call as a JSON object, by parameter name.

    ``def send_invoice(customer, amount, currency="EUR", *items, **extra)`` called as
    ``send_invoice("C-1", 120, "USD", "a", "b", note="x")`` gives
    ``{"customer": "C-1", "amount": 120, "currency": "USD", "items": ["a", "b"], "note": "x"}``:
    defaults are filled in, ``*args`` becomes a list under its name, ``**kwargs`` are merged in.
    Every value must be JSON-serializable (TypeError otherwise, before anything is sent).
    """
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    mapped: Dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            mapped[name] = list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            mapped.update(value)
        else:
            mapped[name] = value
    try:
        json.dumps(mapped, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            "@requires_approval(%s): the arguments must be JSON-serializable (%s); pass arguments=… "
            "to map them yourself" % (getattr(function, "__qualname__", function), error)
        ) from None
    return mapped


def _call_with_changes(
    function: Callable[..., Any], args: tuple, kwargs: Dict[str, Any], changed: Dict[str, Any]
) -> Any:
    """Calls the function with the approver's changes put back where ``call_arguments`` took them."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    for name, value in list(bound.arguments.items()):
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            bound.arguments[name] = tuple(changed.get(name, list(value)))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            bound.arguments[name] = {key: changed.get(key, item) for key, item in value.items()}
        else:
            bound.arguments[name] = changed.get(name, value)
    return function(*bound.args, **bound.kwargs)


def requires_approval(
    client: Client,
    tool_name: str,
    *,
    agent_identity: Optional[AgentIdentity] = None,
    context: Optional[Mapping[str, Any]] = None,
    timeout: float = DEFAULT_WAIT_SECONDS,
    arguments: Optional[Callable[..., Mapping[str, Any]]] = None,
    idempotency_key: Optional[Callable[..., str]] = None,
) -> Callable[[F], F]:
    """Makes every call of the decorated function a hold first.

    A call submits a hold for ``tool_name`` with the call's arguments (see ``call_arguments``;
    or pass ``arguments=lambda *a, **kw: {...}`` to choose what the approver sees), waits up to
    ``timeout`` seconds for the decision, and runs the function only when it is approved (by a rule
    or by the people required). Otherwise it raises ``NotApproved``, whose ``decision`` says why:
    rejected (``decision.reason``), expired, or still pending when the wait ran out. Approved with
    changes (a rule's ``editable``), the function runs with the changed arguments; with your own
    ``arguments=`` mapping, which cannot be applied back, it raises ``NotApproved`` instead.

    ``agent_identity`` defaults to the client's, else to the function's module and name.
    Each call is a new logical action with a new idempotency key (retries inside one call reuse
    it); pass ``idempotency_key=lambda *a, **kw: "invoice-" + a[0]`` to make calls with the same key
    one hold (a second call then gets the first hold's decision). ``wrapper.last_decision`` holds
    the decision of the latest call.
    """
    if not isinstance(tool_name, str) or tool_name == "":
        raise TypeError("requires_approval: tool_name is required")

    def decorate(function: F) -> F:
        identity = agent_identity or client.agent_identity or {
            "id": "%s.%s" % (function.__module__, function.__qualname__)
        }

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            mapped = dict(arguments(*args, **kwargs)) if arguments else call_arguments(function, args, kwargs)
            decision = client.hold(
                tool_name=tool_name,
                arguments=mapped,
                agent_identity=identity,
                context=context,
                idempotency_key=idempotency_key(*args, **kwargs) if idempotency_key else None,
                wait=True,
                timeout=timeout,
            )
            wrapper.last_decision = decision  # type: ignore[attr-defined]
            if not decision.approved:
                raise NotApproved(decision)
            if decision.changed:
                # The approver changed the call: it runs as changed, or (mapped by hand) not at all.
                if arguments or decision.arguments is None:
                    raise NotApproved(decision)
                return _call_with_changes(function, args, kwargs, decision.arguments)
            return function(*args, **kwargs)

        wrapper.last_decision = None  # type: ignore[attr-defined]
        return cast(F, wrapper)

    return decorate
