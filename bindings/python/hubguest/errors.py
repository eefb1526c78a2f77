# SPDX-License-Identifier: MIT OR Apache-2.0
"""The exceptions of hubguest, and libguest's -errno codes mapped to them.

Every exception the binding raises for something the hub or libguest said
is a hubguest.Error; a value that does not fit a signature is a TypeError
or ValueError instead, raised before anything is sent."""

import errno
import os


class Error(Exception):
    """Something libguest or the hub refused or reported. .code is
    libguest's status (a negative errno) when there is one, else None."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class AttachError(Error):
    """guest_attach failed; the message is libguest's why (started by hand
    without a spawn ticket, say)."""


class CallError(Error):
    """A call failed. .method is the method called."""

    def __init__(self, message, code=None, method=None):
        super().__init__(message, code)
        self.method = method


class RemoteError(CallError):
    """The method answered Err: .message is its error text (for a Python
    handler that raised, "ExcType: message")."""

    def __init__(self, method, message):
        super().__init__("%s: %s" % (method, message), -errno.EREMOTEIO, method)
        self.message = message


class HubUnreachable(RemoteError):
    """The callee, a guest that answers for another host (a bridge),
    answered that the remote hub could not be reached: .message is its
    text. A handler that raises it answers the same to its caller."""

    def __init__(self, method, message):
        super().__init__(method, message)
        self.code = -errno.EHOSTUNREACH


class RemoteTimeout(RemoteError, TimeoutError):
    """The callee, a guest that answers for another host (a bridge),
    answered that the remote side timed out: .message is its text (the
    caller's own timeout is a Timeout, not this). A handler that raises
    it answers the same to its caller."""

    def __init__(self, method, message):
        super().__init__(method, message)
        self.code = -errno.ETIMEDOUT


class HubError(CallError):
    """The hub answered for the method, which never saw the call (its
    guest down or restarting, too many calls in flight, the arguments too
    large for it, a host service's refusal): .message is the hub's text."""

    def __init__(self, method, message):
        super().__init__("%s: %s" % (method, message), -errno.ECONNREFUSED, method)
        self.message = message


class UnknownMethod(CallError):
    """Nobody registered the method."""


class InvalidPayload(CallError):
    """The arguments did not match the method's signature (as the hub or
    the callee checked them), or the result did not decode by it."""


class Cancelled(CallError):
    """The call was cancelled: the callee answered Cancelled, or the hub
    did for it (its guest died while serving the call). .message is the
    text that came with it ("guest NAME died serving METHOD: HOW"), else
    "cancelled"."""

    def __init__(self, method, message=None):
        self.message = message or "cancelled"
        super().__init__("%s: %s" % (method, self.message), -errno.ECANCELED, method)


class Timeout(CallError, TimeoutError):
    """No answer within the timeout (a Cancel went to the callee)."""


class PayloadTooLarge(CallError, ValueError):
    """Arguments, a result or a channel item larger than the hub carries
    (or, for an item, than the channel's credit window)."""


class HubGone(Error, ConnectionError):
    """hubd is gone (its doorbell closed)."""


class Stopping(Error):
    """The guest is stopping (stop(), SIGTERM, SIGINT) while a handler
    waited inside run() or serve(): for a call's answer (the callee gets
    a Cancel), a stream's next item, a send's credit. The wait ends so
    that the handler returns and run() with it, before hubd's stop_grace
    runs out; the handler's caller gets this as the error text."""


class Ended(Error):
    """The hub ended this guest for breaking a rule: .reason names it."""

    def __init__(self, reason):
        super().__init__("the hub ended this guest: %s" % reason, -errno.ECONNABORTED)
        self.reason = reason


class ChannelClosed(Error):
    """A send on a channel that the receiver stopped, or that was ended;
    or a stream whose sender reset it."""


class UserError(Exception):
    """Raise it in a handler to answer Err with exactly its message (no
    "ExcType: " prefix and no traceback on stderr)."""


def describe(code):
    """Text for a libguest status (-errno)."""
    return os.strerror(-code) if code < 0 else "status %d" % code


def call_error(method, code, text=None, reason=None, size=None):
    """The exception for a call of method that ended with libguest status
    code (guest_result_fn's statuses); text is the error's text, reason
    the Goodbye's for -ECONNABORTED, size the arguments' bytes."""
    if code == -errno.EREMOTEIO:
        return RemoteError(method, text if text is not None else "(no error text)")
    if code == -errno.ECONNREFUSED:
        return HubError(method, text if text is not None else "(no error text)")
    if code == -errno.EHOSTUNREACH:
        return HubUnreachable(method, text if text is not None else "(no error text)")
    if code == -errno.ETIMEDOUT and text is not None:
        return RemoteTimeout(method, text)    # answered, not our own timeout
    if code == -errno.ENOSYS:
        return UnknownMethod("%s: no such method" % method, code, method)
    if code == -errno.EBADMSG:
        return InvalidPayload("%s: invalid payload (the arguments do not match the "
                              "method's signature)" % method, code, method)
    if code == -errno.ECANCELED:
        return Cancelled(method, text)
    if code == -errno.ETIMEDOUT:
        return Timeout("%s: no answer in time" % method, code, method)
    if code == -errno.EMSGSIZE:
        return PayloadTooLarge("%s: its arguments of %s bytes are larger than the hub "
                               "carries" % (method, "?" if size is None else size),
                               code, method)
    return status_error(code, reason, "%s: " % method)


def status_error(code, reason=None, prefix=""):
    """The exception for a libguest status that is not about one call."""
    if code == -errno.ECONNABORTED:
        return Ended(reason or "(no reason given)")
    if code in (-errno.EPIPE, -errno.ESHUTDOWN):
        return HubGone(prefix + "the hub is gone", code)
    if code == -errno.ENOTCONN:
        return ChannelClosed(prefix + "the channel is closed", code)
    if code == -errno.ETIMEDOUT:
        return Timeout(prefix + "timed out", code)
    if code == -errno.EMSGSIZE:
        return PayloadTooLarge(prefix + "too large", code)
    return Error(prefix + describe(code), code)
