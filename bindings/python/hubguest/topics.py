# SPDX-License-Identifier: MIT OR Apache-2.0
"""Topics: events one-to-many (the hub's doc/events.md). A guest
advertises a topic and publishes to it (guest_advertise, guest_publish);
any guest subscribes, with a handler run on each event (guest_subscribe
with a C callback) or a Topic to iterate over (guest_subscribe without
one, then guest_next_event); wait_method() waits for a method to appear
(guest_wait_method, built on the hub.methods topic: no polling).

An event's values are its topic's signature's arguments ("str",
"u64,str": a method's arguments before "->"), encoded and decoded as
codec.py does a call's.

Topics is one of Guest's bases (guest.py): it works on the Guest's
handle, loop and state, and imports nothing of the binding but _lib,
_wait, codec and errors."""

import asyncio
import ctypes
import errno
import inspect
import itertools
import sys
import traceback

from . import _lib
from ._lib import c_name
from ._wait import deadline_in, ms_left
from .codec import Chan, Signature
from .errors import Error, PayloadTooLarge, status_error

POLICIES = {"block": 0, "drop-oldest": 1, "latest": 2}
RETAIN = 1                  # GUEST_TOPIC_RETAIN
EVENT_MAX = 1 << 20         # HP_TOPIC_EVENT_MAX: the largest event a topic takes
FIRST_CAP = 4096            # a Topic's buffer at first; doubled as events need
TOPIC = "a topic's name"
# wait_method waits in slices this long: each a guest_wait_method, between
# which Python's signal handlers run (SIGTERM: stop)
WAIT_SLICE_MS = 500


def event_signature(text):
    """The Signature of a topic whose events are text's arguments ("str",
    "u64,str", "" for none): as a method's, with a unit result. TypeError
    or ValueError when it is not one."""
    if isinstance(text, Signature):
        return text
    if not isinstance(text, str):
        raise TypeError("a topic's signature is a str such as 'str' or 'u64,str', not %s"
                        % type(text).__name__)
    if "->" in text:
        raise ValueError("a topic's signature %r is its arguments alone (no '->')" % text)
    sig = Signature(text + "->unit")
    if any(isinstance(t, Chan) for t in sig.args):
        raise ValueError("a topic's signature %r has a chan<T>: an event cannot carry one"
                         % text)
    return sig


def _policy(policy):
    try:
        return POLICIES[policy]
    except (KeyError, TypeError):
        raise ValueError("policy is one of %s, not %r" % (", ".join(POLICIES), policy)) from None


class Event:
    """One event of a topic: .args (its values, a tuple), .value (the one
    value of a one-argument topic; the tuple for several; None for
    none), .seq (its sequence in the topic), .lost (events this
    subscription lost just before it: lapped, skipped under latest, or
    spoiled by the publisher), .topic."""
    __slots__ = ("topic", "args", "seq", "lost")

    def __init__(self, topic, args, seq, lost):
        self.topic, self.args, self.seq, self.lost = topic, tuple(args), seq, lost

    @property
    def value(self):
        if len(self.args) == 1:
            return self.args[0]
        return self.args or None

    def __repr__(self):
        return "Event(%r, %r, seq=%d, lost=%d)" % (self.topic, self.value, self.seq, self.lost)


class _Decoder:
    """Events' bytes to values by the signature libguest says the topic has
    now (parsed once per text); a spoiled one counted into the next's
    lost and told on stderr, never raised."""
    __slots__ = ("topic", "sigs", "carry")

    def __init__(self, topic):
        self.topic, self.sigs, self.carry = topic, {}, 0

    def event(self, ev, data):
        """An Event, or None for one that is no event (ev: guest_event)."""
        why = "the publisher spoiled it" if ev.bad else None
        args = ()
        if why is None:
            text = (ev.sig or b"").decode("utf-8", "replace")
            try:
                sig = self.sigs.get(text)
                if sig is None:
                    sig = self.sigs[text] = event_signature(text)
                args = sig.decode_args(data)
            except (TypeError, ValueError) as e:
                why = "not of its signature %r (%s)" % (text, e)
        if why is not None:
            print("hubguest: topic %s: event %d skipped: %s" % (self.topic, ev.seq, why),
                  file=sys.stderr, flush=True)
            self.carry += ev.lost + 1
            return None
        lost, self.carry = ev.lost + self.carry, 0
        return Event(self.topic, args, ev.seq, lost)


class _Subscription:
    """A handler's subscription (subscribe())."""
    __slots__ = ("topic", "policy", "fn", "is_async", "sub", "decoder")

    def __init__(self, topic, policy, fn):
        self.topic, self.policy, self.fn = topic, policy, fn
        self.is_async = inspect.iscoroutinefunction(fn)
        self.sub = None
        self.decoder = _Decoder(topic)


class Topic:
    """A subscription read as an iterator of Events (for ev in t), or an
    async iterator under serve() (async for ev in t); g.topic() makes
    one. Each wait serves the guest meanwhile; next(timeout=) waits at
    most that long. close() (or leaving a with block) unsubscribes; so
    does dropping the last reference to it, at the guest's next service
    or subscribe (a guest has at most 64 subscriptions)."""

    def __init__(self, g, topic, policy):
        self._g = g
        self.topic = topic
        self.policy = policy
        self._decoder = _Decoder(topic)
        self._buf = ctypes.create_string_buffer(FIRST_CAP)
        self._sub = None
        self._sub = g._subscribe_c(topic, policy, _lib.EVENT_FN(), None)   # fn NULL

    def close(self):
        """Unsubscribes (idempotent)."""
        sub, self._sub = self._sub, None
        if sub is not None and self._g._h is not None:
            self._g._lib.guest_unsubscribe(self._g._h, sub)

    def __del__(self):
        # dropped unclosed: only noted, as a finalizer may run in any
        # thread and inside a call into libguest
        if self._sub is not None:
            self._g._dropped_subs.append(self._sub)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def _take(self, ms):
        """guest_next_event for up to ms: an Event, or None (nothing came,
        or a spoiled one skipped)."""
        g = self._g
        if self._sub is None:
            raise Error("topic %s: closed" % self.topic)
        ev = _lib.GuestEvent()
        while True:
            rc = g._lib.guest_next_event(g._handle(), self._sub, self._buf, len(self._buf),
                                         ctypes.byref(ev), ms)
            if rc != -errno.EMSGSIZE or len(self._buf) >= EVENT_MAX:
                break
            self._buf = ctypes.create_string_buffer(len(self._buf) * 2)
        g._reraise()
        if rc < 0:
            raise status_error(rc, g.goodbye_reason, "topic %s: " % self.topic)
        if rc == 0:
            return None
        return self._decoder.event(ev, ctypes.string_at(self._buf, ev.len))

    def next(self, timeout=None):
        """The next Event, waiting up to timeout seconds (None: for ever)
        while serving; None if none came in time, or the guest stops
        (stop(), SIGTERM)."""
        deadline = deadline_in(timeout)
        while not self._g._stopping:
            ev = self._take(ms_left(deadline))
            if ev is not None:
                return ev
            if deadline is not None and ms_left(deadline) == 0:
                return None
        return None

    def __iter__(self):
        return self

    def __next__(self):
        """The next Event; the iteration ends when the guest stops."""
        ev = self.next()
        if ev is None:
            raise StopIteration
        return ev

    def __aiter__(self):
        return self

    async def __anext__(self):
        g = self._g
        if g._loop is None:
            raise Error("async for over a topic in a guest served by serve() (or iterate "
                        "with for)")
        while True:
            ev = self._take(0)
            if ev is not None:
                return ev
            if g._stopping:
                raise StopAsyncIteration
            await g._next_service()


class Topics:
    """A Guest's topics: advertise(), publish(), subscribe(), topic(),
    unsubscribe() and wait_method()."""

    def _topics_init(self):
        self._adverts = {}              # topic -> (Signature, flags), advertised at attach
        self._subs = {}                 # token -> _Subscription
        self._sub_tokens = itertools.count(1)
        self._dropped_subs = []         # of Topics dropped unclosed
        self._c_event = _lib.EVENT_FN(self._on_event)

    def _topics_attach(self):
        """At attach: what was advertised and subscribed before."""
        for topic, (sig, flags) in list(self._adverts.items()):
            self._advertise_c(topic, sig, flags)
        for token, s in list(self._subs.items()):
            s.sub = self._subscribe_c(s.topic, s.policy, self._c_event, token)

    def _topics_need_loop(self):
        return any(s.is_async for s in self._subs.values())

    # -- publishing ------------------------------------------------------------

    def advertise(self, topic, signature, retain=False):
        """Makes this guest the publisher of topic (its NAME.*, or one its
        config's publishes = lists), whose events are signature's
        arguments ("str", "u64,str"). retain=True: a subscriber that comes
        late gets the newest event at once. Before the guest attaches it
        is only noted (advertised when it attaches). Raises Error with the
        hub's reason when refused."""
        c_name(topic, TOPIC)
        sig = event_signature(signature)
        flags = RETAIN if retain else 0
        if self._h is None and not self._ever:
            self._adverts[topic] = (sig, flags)
            return
        self._handle()
        self._advertise_c(topic, sig, flags)
        self._adverts[topic] = (sig, flags)

    def _advertise_c(self, topic, sig, flags):
        text = sig.text[:-len("->unit")]
        rc = self._lib.guest_advertise(self._h, c_name(topic, TOPIC), text.encode(), flags)
        if rc == 0:
            return
        why = {-errno.EPERM: "not one of this guest's names (its NAME.* or its config's "
                             "publishes =)",
               -errno.EINVAL: "a bad name or signature",
               -errno.EEXIST: "another guest publishes it"}.get(rc)
        if why is None:
            raise status_error(rc, self.goodbye_reason, "advertise %s: " % topic)
        raise Error("advertise %s (%s): %s" % (topic, text, why), rc)

    def publish(self, topic, *args):
        """Publishes one event to topic (advertised by this guest), its
        values args, encoded by the topic's signature: TypeError or
        ValueError when they do not fit it. May wait (serving) for a block
        subscriber, up to the topic's block timeout."""
        ad = self._adverts.get(topic)
        if ad is None:
            raise Error("publish %s: not advertised by this guest (advertise() first)"
                        % topic, -errno.ENOENT)
        payload = ad[0].encode_args(args, topic)
        rc = self._lib.guest_publish(self._handle(), c_name(topic, TOPIC), payload or None,
                                     len(payload))
        self._reraise()
        if rc == 0:
            return
        if rc == -errno.EMSGSIZE:
            raise PayloadTooLarge("publish %s: an event of %d bytes, larger than the topic "
                                  "takes" % (topic, len(payload)), rc)
        raise status_error(rc, self.goodbye_reason, "publish %s: " % topic)

    # -- subscribing -----------------------------------------------------------

    def _unsubscribe_dropped(self):
        """Ends the subscriptions of Topics dropped unclosed."""
        while self._dropped_subs:
            sub = self._dropped_subs.pop()
            if self._h is not None:
                self._lib.guest_unsubscribe(self._h, sub)

    def _subscribe_c(self, topic, policy, fn, token):
        self._unsubscribe_dropped()
        rc = self._lib.guest_subscribe(self._handle(), c_name(topic, TOPIC), _policy(policy),
                                       fn, token)
        if rc > 0:
            return rc
        why = {-errno.EPERM: "the config does not let this guest subscribe",
               -errno.EINVAL: "a bad name or policy",
               -errno.EMFILE: "too many subscriptions"}.get(rc)
        if why is None:
            raise status_error(rc, self.goodbye_reason, "subscribe %s: " % topic)
        raise Error("subscribe %s: %s" % (topic, why), rc)

    def subscribe(self, topic, policy="drop-oldest"):
        """Decorator: the function runs on each event of topic, given its
        values (a one-argument topic's one value):

            @g.subscribe("kv.changed")
            def changed(key): ...

        An async def one runs as a task of serve()'s loop (run() starts
        one). policy: "drop-oldest" (the default: lapped when behind),
        "block" (the publisher waits for us, bounded) or "latest". The
        topic need not be published yet. What the function raises is
        printed on stderr; the guest serves on."""
        c_name(topic, TOPIC)
        _policy(policy)

        def deco(fn):
            if not callable(fn):
                raise TypeError("a subscriber must be callable")
            s = _Subscription(topic, policy, fn)
            token = next(self._sub_tokens)
            self._subs[token] = s
            if self._h is not None or self._ever:
                try:
                    s.sub = self._subscribe_c(topic, policy, self._c_event, token)
                except BaseException:
                    del self._subs[token]
                    raise
            return fn
        return deco

    def topic(self, topic, policy="drop-oldest"):
        """A Topic: topic's events to iterate over (for, or async for
        under serve()), each an Event (.value, .args, .seq, .lost):

            for ev in g.topic("kv.changed"):
                print(ev.value, ev.lost)"""
        _policy(policy)
        return Topic(self, topic, policy)

    def unsubscribe(self, what):
        """Ends a subscription: a function subscribe() decorated, or a
        Topic (as its close())."""
        if isinstance(what, Topic):
            what.close()
            return
        for token, s in list(self._subs.items()):
            if s.fn is what:
                del self._subs[token]
                if s.sub is not None and self._h is not None:
                    self._lib.guest_unsubscribe(self._h, s.sub)
                return
        raise ValueError("%r is not subscribed" % (what,))

    def _on_event(self, g, evp, token):
        try:
            s = self._subs.get(token)
            if s is None:
                return
            ev = evp.contents
            data = ctypes.string_at(ev.data, ev.len) if ev.len and ev.data else b""
            e = s.decoder.event(ev, data)
            if e is not None:
                self._deliver(s, e)
        except BaseException as exc:    # nothing may escape into C
            self._defer(exc)

    def _deliver(self, s, e):
        try:
            v = s.fn(*e.args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            _report(s, exc)
            return
        if not inspect.isawaitable(v):
            return
        if self._loop is None:
            if inspect.iscoroutine(v):
                v.close()
            print("hubguest: the subscriber of %s is async: serve the guest with serve() (or "
                  "run(), which does)" % s.topic, file=sys.stderr, flush=True)
            return
        task = asyncio.ensure_future(v, loop=self._loop)
        task.add_done_callback(lambda t: None if t.cancelled() or t.exception() is None
                               else _report(s, t.exception()))

    # -- discovery ---------------------------------------------------------------

    def wait_method(self, name, timeout=None):
        """Waits until method name can be called (registered, its guest
        up), serving meanwhile, up to timeout seconds (None: for ever).
        True; raises TimeoutError when it did not appear in time. Built
        on the hub.methods topic: nothing polls."""
        deadline = deadline_in(timeout)
        while True:
            ms = WAIT_SLICE_MS if deadline is None else min(WAIT_SLICE_MS, ms_left(deadline))
            rc = self._lib.guest_wait_method(self._handle(), c_name(name), ms)
            self._reraise()
            if rc == 0:
                return True
            if rc != -errno.ETIMEDOUT:
                raise status_error(rc, self.goodbye_reason, "wait for %s: " % name)
            if deadline is not None and ms_left(deadline) == 0:
                raise TimeoutError("method %s did not appear within %g s" % (name, timeout))
            if self._stopping:
                raise Error("wait for %s: the guest is stopping" % name)


def _report(s, exc):
    print("hubguest: the subscriber of %s raised:" % s.topic, file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


__all__ = ["Event", "Topic", "event_signature", "POLICIES"]
