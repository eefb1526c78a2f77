# SPDX-License-Identifier: MIT OR Apache-2.0
"""hubguest: hub guest plugins in Python.

A guest is a process hubd starts with a spawn ticket on its command line;
it attaches, registers methods, and serves calls until hubd stops it:

    import hubguest

    g = hubguest.attach()                       # attaches at its first use,
                                                # with the ticket in sys.argv

    @g.method("greeter.hello", "str->str")      # arguments and result by
    def hello(name):                            # the signature
        return "hello, " + name

    @g.method("greeter.shout", "str->str")
    def shout(text):
        return g.call("echo.echo", text, timeout=5).upper()   # another guest

    if __name__ == "__main__":
        g.run()     # until SIGTERM or SIGINT: then a clean detach

Types: str <-> str, bytes <-> bytes, u64 and i64 <-> int, bool <-> bool,
unit <-> None; a chan<T> argument reaches a handler as a Sender, an
rx<T> (an upload, the caller sends) as an Upload to iterate over, and a
caller passes an iterator (or async iterator) for an rx<T>. A handler
that raises answers Err "ExcType: message" (its traceback on stderr) and
the guest serves on. A call that fails raises a CallError (RemoteError:
the callee's error, HubError: the hub's, UnknownMethod, Timeout, ...),
HubGone or Ended: all are hubguest.Error; once the guest is stopping
(SIGTERM), a handler's blocking wait inside run() or serve() raises
Stopping. A guest that answers for another host (a bridge) forwards what
failed there by raising HubUnreachable or RemoteTimeout (RemoteErrors its
callers get as they were raised).

Topics, events one-to-many: a guest advertises its topic and publishes
to it; any guest subscribes, with a handler or an iterator:

    g.advertise("greeter.greeted", "str", retain=True)
    g.publish("greeter.greeted", name)

    @g.subscribe("kv.changed")                  # each event's values
    def changed(key): ...

    for ev in g.topic("kv.changed", policy="latest"):
        print(ev.value, ev.seq, ev.lost)

A call carries a deadline and a trace (W3C traceparent): a handler reads
its call's with hubguest.current_call() (.deadline, .remaining(),
.trace), and the calls it makes inherit both (the same trace, the earlier
of the deadline and their own timeout) unless deadline= or trace= say
otherwise; the hub and libguest never start a call whose deadline has
passed (its caller gets hubguest.RemoteTimeout). hubguest.cancelled()
tells a handler that its caller gave up or went away: it may stop.

g.wait_method("kv.get", timeout=5) waits until a method can be called,
without polling (the hub.methods topic).

asyncio: async def handlers and subscribers, await g.call_async(...),
async for over g.stream(...) and g.topic(...), and await g.serve() to
serve inside a running loop.

The binding is ctypes over libguest.so.0 (or the file HUB_LIBGUEST
names): guestlib/guest.h documents what each step does underneath.
hubguest.testing has a throwaway hub for a plugin's tests."""

from .call import CHANNEL, Call, Stream
from .codec import Chan, Rx, Signature, decode, encode
from .errors import (AttachError, CallError, Cancelled, ChannelClosed, Ended, Error,
                     HubError, HubGone, HubUnreachable, InvalidPayload, PayloadTooLarge,
                     RemoteError, RemoteTimeout, Stopping, Timeout, UnknownMethod,
                     UserError)
from .context import INHERIT, NEW_TRACE, CallInfo, current_call
from .guest import Guest, attach
from .handlers import caller, cancelled
from .sender import Sender
from .topics import Event, Topic
from .upload import Upload

__version__ = "0.8.0"

__all__ = [
    "attach", "caller", "cancelled", "current_call", "CallInfo", "INHERIT", "NEW_TRACE", "Guest",
    "Call",
    "Stream", "Sender", "Upload", "Event", "Topic", "CHANNEL", "Rx",
    "Signature", "Chan",
    "encode", "decode", "Error", "AttachError", "CallError", "RemoteError", "HubError",
    "UnknownMethod", "InvalidPayload", "Cancelled", "Timeout", "PayloadTooLarge",
    "HubGone", "Stopping", "Ended", "ChannelClosed", "UserError", "HubUnreachable", "RemoteTimeout",
]
