# SPDX-License-Identifier: MIT OR Apache-2.0
"""The methods a guest serves: registering them (guest_register), and for
each request its handler run on the decoded arguments (an async one as a
task of serve()'s loop), then its answer: the result encoded, or the
exception as an Err. caller() tells a handler who called; the call's
deadline and trace are current_call()'s (context.py) while it runs;
cancelled() whether its caller gave up on it.

Handlers is one of Guest's bases (guest.py): it works on the Guest's
state (its handle, _methods, _answering, the C callback _c_handler) and
imports nothing of the binding but codec, context, errors and sender."""

import asyncio
import contextvars
import ctypes
import errno
import inspect
import re
import sys
import traceback

from ._lib import METHOD_NAME_MAX, c_name, method_name_refused
from .codec import Chan, Rx, Signature
from .context import CallInfo, _current
from .errors import Error, HubUnreachable, RemoteTimeout, Stopping, UserError, status_error
from .sender import Sender
from .upload import Upload

# What a raised error's message keeps at most (bytes); of a
# forwarded error's text (guest_reply_status keeps as much).
ERROR_MAX = 200
FORWARD_MAX = 1023
# the lone surrogates that surrogateescape does not make (U+DC80..U+DCFF:
# the bytes 0x80..0xFF)
_LONE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


class _Running:
    """A call whose handler runs (an async one's task too): what caller()
    asks libguest about, while live (libguest frees a call answered)."""
    __slots__ = ("g", "call", "live")

    def __init__(self, g, call):
        self.g, self.call, self.live = g, call, True


_running = contextvars.ContextVar("hubguest_running", default=None)


def caller():
    """Inside a handler (an async def one too): who made the call, as
    guest_call_caller says: the calling guest's name, "client:UID" for a
    control client (hubctl call), "hub" for the hub's own. The hub says
    it (once per call, asked only if a handler asks), so a handler may
    trust it. None outside a handler; raises hubguest.Error when nobody
    can tell (the caller left, the hub is gone)."""
    r = _running.get()
    if r is None:
        return None
    if not r.live or r.g._h is None:
        raise Error("no caller: the call is over")
    name = r.g._lib.guest_call_caller(r.call)
    r.g._reraise()
    if name is None:
        raise Error("the hub cannot say who made this call (its caller left, or the "
                    "hub is gone)")
    return name.decode("utf-8", "replace")


def cancelled():
    """Inside a handler (an async def one too): whether the call was
    cancelled: its caller gave up (its timeout, its task cancelled) or went
    away (a client gone, a guest that died), or its lane closed, as
    guest_call_cancelled says. Advisory: the handler may stop early, and
    still answers. The Cancel is seen once the guest serves (g.service(),
    a call's or a stream's wait, serve()'s loop). False outside a handler
    and once its call is answered."""
    r = _running.get()
    if r is None or not r.live or r.g._h is None:
        return False
    return bool(r.g._lib.guest_call_cancelled(r.call))


def _error_text(text, limit=ERROR_MAX):
    """text as guest_reply_error takes it: no NUL, at most limit bytes of
    UTF-8, cut between characters. A lone surrogate that surrogateescape
    made (a filename's byte) is its byte again, and bytes that are not
    UTF-8 are U+FFFD, as guest_reply_error sends them; another lone
    surrogate is U+FFFD too."""
    text = _LONE.sub("\ufffd", text.replace("\0", "\\0"))
    b = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")
    if len(b) > limit:
        b = b[:limit - 3]
        while b and (b[-1] & 0xC0) == 0x80:
            b = b[:-1]
        if b and b[-1] >= 0xC0:
            b = b[:-1]
        b += b"..."
    return b


class _Method:
    __slots__ = ("name", "sig", "fn", "is_async")

    def __init__(self, name, sig, fn):
        self.name = name
        self.sig = sig
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)


def _short(v):
    r = repr(v)
    return "%s %s" % (type(v).__name__, r if len(r) <= 40 else r[:37] + "...")


class Handlers:
    """A Guest's methods: register(), method() and the serving of their
    requests."""

    def register(self, name, signature, fn):
        """Registers fn as method name ("service.method") with signature
        ("str,u64->bool", say). fn gets the arguments decoded (a chan<T>
        argument as a Sender, an rx<T> as an Upload to iterate over: for
        in a plain fn, async for in an async one) and returns the result (None for unit); an
        async def fn is awaited (serve() or run() with an event loop), the
        guest serving meanwhile. An exception becomes an Err answer
        "ExcType: message", its traceback on stderr (UserError: its message
        alone, no traceback). A name the hub would refuse, or one this
        guest registered already, raises ValueError here, not at attach."""
        why = method_name_refused(name)
        if why is not None:
            raise ValueError("register %r: %s (1 to %d bytes of A-Z a-z 0-9 _ . -, no empty "
                             "part between dots)" % (name, why, METHOD_NAME_MAX))
        sig = Signature(signature)
        if not callable(fn):
            raise TypeError("a handler must be callable")
        for other in self._methods.values():
            if other.name == name:
                raise ValueError("register %s (%s): this guest registers %s (%s) already "
                                 "(unregister it first)" % (name, sig.text, name, other.sig.text))
        m = _Method(name, sig, fn)
        token = next(self._method_tokens)
        if self._h is None and not self._ever:
            self._methods[token] = m    # registered when it attaches
            return fn
        self._handle()
        self._register(token, m)
        return fn

    def _register(self, token, m):
        self._methods[token] = m
        rc = self._lib.guest_register(self._h, c_name(m.name), m.sig.text.encode(),
                                      self._c_handler, token)
        if rc != 0:
            del self._methods[token]
            why = {-errno.EEXIST: "the name (or its method id) is taken",
                   -errno.EPERM: "not one of this guest's names (its NAME.* or its "
                                 "config's provides)",
                   -errno.ENOSPC: "this guest has as many methods as the hub allows",
                   -errno.EINVAL: "a bad name (1 to 63 of A-Z a-z 0-9 _ . -, no "
                                  "empty part between dots) or signature",
                   -errno.ENAMETOOLONG: "name over 63 bytes",
                   -errno.EREMOTEIO: "the hub refused it (a hub.* name?)"}.get(rc)
            if why is None:
                raise status_error(rc, self.goodbye_reason, "register %s: " % m.name)
            raise Error("register %s (%s): %s" % (m.name, m.sig.text, why), rc)
        self._sigs[m.name] = m.sig

    def unregister(self, name):
        """Withdraws method name, registered before: the hub routes no new
        call of it here (a caller gets "no such method"); the name may be
        registered again. Error ENOENT when this guest has no such
        method, else the hub's refusal."""
        c_name(name)
        tokens = [t for t, m in self._methods.items() if m.name == name]
        if not tokens:
            raise Error("unregister %s: not registered here" % name, -errno.ENOENT)
        if self._h is not None:
            rc = self._lib.guest_unregister(self._h, c_name(name))
            if rc != 0:
                raise status_error(rc, self.goodbye_reason, "unregister %s: " % name)
        for t in tokens:
            del self._methods[t]
        self._sigs.pop(name, None)

    def method(self, name, signature):
        """Decorator: @g.method("greeter.hello", "str->str")."""
        def deco(fn):
            self.register(name, signature, fn)
            return fn
        return deco

    def _on_request(self, call, args, n, token):
        try:
            m = self._methods.get(token)
            data = ctypes.string_at(args, n) if n else b""
            if m is None:
                self._lib.guest_reply_error(call, b"no handler")
                return
            self._dispatch(call, m, data)
        except BaseException as e:     # nothing may escape into C
            self._defer(e)

    def _dispatch(self, call, m, data):
        # caller() names this call while its handler runs (a task made
        # for it copies the context)
        r = _Running(self, call)
        token = _running.set(r)
        # its deadline and trace: current_call(), and what the calls the
        # handler makes inherit (context.py)
        trace = self._lib.guest_call_trace(call)
        ctoken = _current.set(CallInfo(self._lib.guest_call_deadline(call),
                                       trace.decode("ascii", "replace") if trace else None))
        try:
            self._dispatch_in(call, m, data, r)
        finally:
            _current.reset(ctoken)
            _running.reset(token)

    def _dispatch_in(self, call, m, data, r):
        if self._stopping and self._loop is not None:
            # serve() draining: its handlers finish, no new one starts
            r.live = False
            self._lib.guest_reply_error(call, b"the guest is stopping")
            return
        try:
            values = m.sig.decode_args(data)
        except ValueError as e:
            self._lib.guest_reply_error(call, _error_text("arguments: %s" % e))
            return
        senders = []
        for i, t in enumerate(m.sig.args):
            if isinstance(t, Chan):
                s = Sender(self, values[i], t.item, True)
                senders.append(s)
                values[i] = s
            elif isinstance(t, Rx):
                values[i] = Upload(self, values[i], t.item)
        try:
            v = m.fn(*values)
        except BaseException as e:
            r.live = False
            self._answer(call, m, senders, None, e)
            return
        if inspect.isawaitable(v):
            loop = self._loop
            if loop is None:
                if inspect.iscoroutine(v):
                    v.close()
                r.live = False
                self._answer(call, m, senders, None, Error(
                    "%s is async: serve the guest with serve() (or run(), which "
                    "does when a handler is async)" % m.name))
                return
            self._answering[call] = m
            task = asyncio.ensure_future(v, loop=loop)
            self._handler_tasks.add(task)
            task.add_done_callback(lambda t: self._task_done(call, m, senders, t, r))
            return
        r.live = False
        self._answer(call, m, senders, v, None)

    def _task_done(self, call, m, senders, task, r):
        r.live = False
        self._handler_tasks.discard(task)
        if self._answering.pop(call, None) is None:
            return          # detached meanwhile: libguest freed the call
        if task.cancelled():
            # serve() cancels what still runs when the guest stops
            self._answer(call, m, senders, None,
                         Stopping("%s: the guest is stopping" % m.name, -errno.ESHUTDOWN)
                         if self._stopping else asyncio.CancelledError("cancelled"))
            return
        e = task.exception()
        self._answer(call, m, senders, None if e else task.result(), e)

    def _answer(self, call, m, senders, value, exc):
        if self._h is None:
            return
        if exc is None:
            try:
                payload = m.sig.encode_result(value, m.name)
            except (TypeError, ValueError) as e:
                print("hubguest: %s: %s" % (m.name, e), file=sys.stderr, flush=True)
                exc = UserError("%s returned %s, which does not fit the result "
                                "type %s of %s" % (m.name, _short(value), m.sig.ret, m.sig.text))
        for s in senders:
            try:
                s._end(exc is not None)
            except Error:
                pass
        if exc is None:
            rc = self._lib.guest_reply(call, payload or None, len(payload))
            if rc == -errno.EMSGSIZE:
                print("hubguest: %s: result too large" % m.name, file=sys.stderr, flush=True)
            return
        if isinstance(exc, (HubUnreachable, RemoteTimeout)):
            # an error from elsewhere, forwarded as its caller saw it
            self._lib.guest_reply_status(call, exc.code, _error_text(exc.message, FORWARD_MAX))
            return
        if isinstance(exc, (UserError, Stopping)):
            text = str(exc)     # Stopping: no traceback, nothing went wrong
        else:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self._defer(exc)
            print("hubguest: %s raised:" % m.name, file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            sys.stderr.flush()
            text = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
        self._lib.guest_reply_error(call, _error_text(text))
