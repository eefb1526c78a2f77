# SPDX-License-Identifier: MIT OR Apache-2.0
"""Topics in the Python binding end to end (issue 41): two Python guests
(tests/python/guests/pytopics.py), one publishing, one subscribing with
handlers (sync and async) and iterators (for and async for); a retained
value for a late subscriber; wait_method for a method that appears late
and for one that never does; the greeter example counting kv.changed."""
import os
import subprocess

from conftest import BUILD, PYGUESTS

HUBCTL = os.path.join(BUILD, "hubctl")
TPUB = "[guest tpub]\nexec = %s/pytopics.py\nargs = tpub\n" % PYGUESTS
TSUB = "[guest tsub]\nexec = %s/pytopics.py\nargs = tsub\n" % PYGUESTS
KV = "[guest kv]\nexec = %s/guests/kv\n" % BUILD
WAIT = ("tpub.advertise", "tpub.publish", "tsub.subscribe", "tsub.take", "tsub.wait")


def two(make_hub):
    return make_hub(TPUB + TSUB, up=("tpub", "tsub"), wait=WAIT)


def test_publish_to_sync_and_async_subscribers(make_hub):
    hub = two(make_hub)
    # subscribed before anyone publishes the topic: that is allowed
    hub.ok("tsub.subscribe", "tpub.news")
    hub.ok("tsub.asubscribe", "tpub.news")
    hub.ok("tpub.advertise", "tpub.news", "str", "false")
    for v in ("a", "b", "c"):
        hub.ok("tpub.publish", "tpub.news", v)
    hub.wait(lambda: hub.ok("tsub.seen") == ["a", "b", "c"], "the sync handler's events")
    hub.wait(lambda: hub.ok("tsub.aseen") == ["a", "b", "c"], "the async handler's events")
    # hubctl topics: the publisher, both subscriptions and their policy
    rc, lines, err = hub.ctl("topics")
    assert rc == 0, err
    t = [t for t in lines[0]["topics"] if t["name"] == "tpub.news"]
    assert t and t[0]["publisher"] == "tpub" and t[0]["signature"] == "str", lines
    subs = t[0]["subscribers"]
    assert [s["who"] for s in subs] == ["tsub", "tsub"], subs
    assert all(s["policy"] == "drop-oldest" and s["received"] == 3 for s in subs), subs


def test_several_values_and_a_misfit(make_hub):
    hub = two(make_hub)
    hub.ok("tsub.subscribe", "tpub.pair")
    hub.ok("tpub.advertise", "tpub.pair", "u64,str", "false")
    hub.ok("tpub.publish2", "tpub.pair", "7", "seven")
    hub.wait(lambda: hub.ok("tsub.seen") == ["7 seven"], "a two-value event")
    # a value the signature does not take: refused before it is sent
    assert hub.ok("tpub.publishbad", "tpub.pair").startswith("refused: tpub.pair")
    # a topic this guest may not publish (another guest's name)
    rc, err, _ = hub.call("tpub.advertise", "tsub.mine", "str", "false")
    assert rc == 1 and "not one of this guest's names" in err, err


def test_iterators(make_hub):
    hub = two(make_hub)
    hub.ok("tsub.open", "tpub.it", "drop-oldest")
    hub.ok("tpub.advertise", "tpub.it", "str", "false")
    for v in ("x", "y", "z"):
        hub.ok("tpub.publish", "tpub.it", v)
    assert hub.ok("tsub.take", "tpub.it", "3") == ["x lost=0", "y lost=0", "z lost=0"]
    # async for, in a handler on the guest's asyncio loop
    for v in ("p", "q"):
        hub.ok("tpub.publish", "tpub.it", v)
    assert hub.ok("tsub.atake", "tpub.it", "2") == ["p lost=0", "q lost=0"]
    # nothing more: next() with a timeout says so
    assert hub.ok("tsub.next", "tpub.it", "0.2") is None
    hub.ok("tsub.close", "tpub.it")


def test_a_dropped_topic_unsubscribes(make_hub):
    # a Topic dropped without close() kept its subscription for as long
    # as the guest ran: a handler that made one per call failed with "too
    # many subscriptions" at its 65th call
    hub = two(make_hub)
    hub.ok("tpub.advertise", "tpub.drop", "str", "false")
    assert hub.ok("tsub.dropmany", "tpub.drop", "200") == 200

    def subscribers():
        rc, lines, err = hub.ctl("topics")
        assert rc == 0, err
        return [t["subscribers"] for t in lines[0]["topics"] if t["name"] == "tpub.drop"][0]
    # the last one too, once the guest served again (its next call)
    hub.ok("tsub.seen")
    assert subscribers() == [], subscribers()


def test_retained_value_for_a_late_subscriber(make_hub):
    hub = two(make_hub)
    hub.ok("tpub.advertise", "tpub.kept", "str", "true")
    hub.ok("tpub.publish", "tpub.kept", "v1")
    hub.ok("tpub.publish", "tpub.kept", "v2")
    # subscribed after both: the newest at once, then nothing
    hub.ok("tsub.open", "tpub.kept", "drop-oldest")
    assert hub.ok("tsub.next", "tpub.kept", "5") == "v2"
    assert hub.ok("tsub.next", "tpub.kept", "0.2") is None
    rc, lines, err = hub.ctl("topics")
    t = [t for t in lines[0]["topics"] if t["name"] == "tpub.kept"]
    assert t and t[0]["retain"] is True and t[0]["retained"] == ["v2"], lines


def test_wait_method_late_and_never(make_hub):
    hub = two(make_hub)
    # waits while the method is not there: it appears after the wait began
    w = subprocess.Popen([HUBCTL, "-s", hub.sock, "call", "tsub.wait", "tpub.late", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        hub.wait(lambda: any(c["method"] == "tsub.wait" for c in hub.ctl("calls")[1][0]["calls"]),
                 "tsub.wait in flight")
        hub.ok("tpub.register", "tpub.late")
        out, err = w.communicate(timeout=20)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    assert w.returncode == 0 and out.strip() == "ok", (out, err)
    assert hub.ok("tpub.late") == "late"
    # one that never comes: TimeoutError
    res = hub.ok("tsub.wait", "nobody.there", "0.3")
    assert res.startswith("timeout: method nobody.there did not appear"), res
    # and one that is there already: at once
    assert hub.ok("tsub.wait", "tpub.publish", "0") == "ok"


def test_greeter_counts_kv_changed(make_hub):
    greeter = os.path.join(BUILD, "guests", "greeter")
    hub = make_hub(KV + "[guest greeter]\nexec = %s\n" % greeter, up=("kv", "greeter"),
                   wait=("kv.put", "greeter.seen"))
    assert hub.ok("greeter.seen") == "no change of kv seen yet"
    hub.ok("kv.put", "colour", "blue")
    hub.ok("kv.put", "size", "9")
    hub.wait(lambda: hub.ok("greeter.seen") == "2 changes of kv seen, the last of key 'size'",
             "greeter's count of kv.changed")


# -- without a hub -----------------------------------------------------------

def test_event_signature_and_event():
    import pytest
    from hubguest import Event
    from hubguest.topics import event_signature
    sig = event_signature("u64,str")
    assert sig.decode_args(sig.encode_args((7, "seven"))) == [7, "seven"]
    assert event_signature("").args == ()
    for bad in ("str->unit", "chan<u64>", "nosuch"):
        with pytest.raises(ValueError):
            event_signature(bad)
    with pytest.raises(TypeError):
        event_signature(3)
    assert Event("t", ("a",), 1, 0).value == "a"
    assert Event("t", (1, "b"), 2, 0).value == (1, "b")
    assert Event("t", (), 3, 0).value is None


def test_spoiled_events_are_counted_not_raised(capsys):
    from hubguest import _lib
    from hubguest.topics import _Decoder
    d = _Decoder("t")
    ev = _lib.GuestEvent(sig=b"str", seq=5, lost=1, bad=0)
    e = d.event(ev, b"\x01a")
    assert (e.value, e.seq, e.lost) == ("a", 5, 1)
    ev.bad, ev.seq, ev.lost = 1, 6, 0
    assert d.event(ev, b"") is None                 # the publisher spoiled it
    ev.bad, ev.seq = 0, 7
    assert d.event(ev, b"\x05a") is None            # not of the signature
    ev.seq = 8
    e = d.event(ev, b"\x01b")
    assert (e.value, e.seq, e.lost) == ("b", 8, 2)  # the two skipped, counted
    err = capsys.readouterr().err
    assert "event 6 skipped: the publisher spoiled it" in err
    assert "event 7 skipped: not of its signature 'str'" in err


def test_before_attach_nothing_needs_a_hub():
    import hubguest
    g = hubguest.attach(["x"])
    g.advertise("x.news", "str", retain=True)

    @g.subscribe("y.news", policy="latest")
    def on(v):
        return v
    assert on("z") == "z"
    import pytest
    with pytest.raises(ValueError):
        g.subscribe("y.news", policy="sometimes")
    with pytest.raises(hubguest.Error):
        g.publish("x.other", "v")                   # never advertised
    with pytest.raises(TypeError):
        g.advertise("x.more", 5)
