"""WARC output offline: records, digests, revisits, rotation, file names, dead runs' files, a full disk."""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli
from warcio.archiveiterator import ArchiveIterator

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.web.warc import Exchange, WarcRecorder, open_recorder, warcinfo, whole_members

BODY = gzip.compress(b"<html>hello</html>" * 50)


def exchange(url: str = "http://127.0.0.1:8000/a.html", status: str = "200 OK", body: bytes = BODY) -> Exchange:
    return Exchange(
        url=url, started=datetime(2026, 12, 1, 17, 0, 0, 123456, tzinfo=UTC),
        request_line="GET /a.html HTTP/1.1", request_headers=(("Host", "127.0.0.1:8000"), ("User-Agent", "T/1")),
        protocol="HTTP/1.1", status_line=status,
        response_headers=(("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                          ("Transfer-Encoding", "chunked"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")),
        body=body if not status.startswith("304") else b"", peer="127.0.0.1")


def records(path: Path) -> list[tuple[int, str, dict[str, str], bytes, list[tuple[str, str]]]]:
    """(offset, type, WARC headers, raw payload, HTTP headers) of every record of a file."""
    found = []
    with path.open("rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            payload = record.raw_stream.read()
            http = list(record.http_headers.headers) if record.http_headers else []
            found.append((iterator.get_record_offset(), record.rec_type, dict(record.rec_headers.headers),
                          payload, http))
    return found


def sha1_label(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def test_a_response_is_kept_as_received_with_both_digests_and_a_request_beside_it(tmp_path: Path) -> None:
    recorder = WarcRecorder(tmp_path, 10_000_000, {"software": "sitemapcrawl/test"})
    capture = recorder.record(exchange())
    recorder.close()
    assert recorder.files == [capture.file]
    assert not list(tmp_path.glob("*.open"))
    found = records(tmp_path / capture.file)
    assert [r[1] for r in found] == ["warcinfo", "response", "request"]
    offset, _, headers, payload, http = found[1]
    assert offset == capture.offset
    assert headers["WARC-Record-ID"] == capture.record_id
    assert headers["WARC-Date"] == capture.date == "2026-12-01T17:00:00.123456Z"
    assert headers["WARC-IP-Address"] == "127.0.0.1"
    assert payload == BODY  # still gzipped: the bytes the server sent
    assert headers["WARC-Payload-Digest"] == sha1_label(BODY)
    assert headers["WARC-Block-Digest"].startswith("sha1:")
    assert ("Content-Encoding", "gzip") in http
    assert [v for k, v in http if k == "Set-Cookie"] == ["a=1", "b=2"]  # repeated headers kept apart
    assert not any(k.lower() == "transfer-encoding" for k, _ in http)  # the body is stored unchunked
    request = found[2]
    assert request[2]["WARC-Concurrent-To"] == capture.record_id
    assert ("User-Agent", "T/1") in request[4]


def test_a_304_is_a_revisit_that_refers_to_the_earlier_capture(tmp_path: Path) -> None:
    recorder = WarcRecorder(tmp_path, 10_000_000, {})
    first = recorder.record(exchange())
    again = recorder.record(exchange(status="304 Not Modified"), refers=first)
    recorder.close()
    assert again.revisit and not first.revisit
    revisit = next(r for r in records(tmp_path / again.file) if r[1] == "revisit")
    assert revisit[0] == again.offset
    assert revisit[2]["WARC-Profile"] == "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    assert revisit[2]["WARC-Refers-To"] == first.record_id
    assert revisit[2]["WARC-Refers-To-Date"] == first.date
    assert revisit[2]["WARC-Refers-To-Target-URI"] == "http://127.0.0.1:8000/a.html"


def test_files_rotate_at_the_size_each_with_a_warcinfo_and_names_never_shared(tmp_path: Path) -> None:
    recorder = WarcRecorder(tmp_path, 1_000, {"software": "sitemapcrawl/test"})
    captures = [recorder.record(exchange(f"http://127.0.0.1:8000/{i}.html")) for i in range(5)]
    other = WarcRecorder(tmp_path, 1_000, {})
    other.record(exchange())
    recorder.close()
    other.close()
    assert len(recorder.files) == 5  # each exchange is over 1,000 bytes: one file each
    assert len(set(recorder.files) | set(other.files)) == 6
    for capture, name in zip(captures, recorder.files, strict=True):
        assert capture.file == name
        found = records(tmp_path / name)
        assert found[0][1] == "warcinfo"
        assert found[0][2]["WARC-Filename"] == name
    stem = recorder.files[0].rsplit("-", 1)[0]
    assert [name.rsplit("-", 1)[1] for name in recorder.files] == [f"{i:05d}.warc.gz" for i in range(5)]
    assert all(name.startswith(stem) for name in recorder.files)


def test_an_open_file_keeps_every_finished_record_readable(tmp_path: Path) -> None:
    recorder = WarcRecorder(tmp_path, 10_000_000, {})
    recorder.record(exchange())
    recorder.record(exchange())
    (open_file,) = tmp_path.glob("*.warc.gz.open")  # not closed: what a killed process leaves
    assert [r[1] for r in records(open_file)] == ["warcinfo", "response", "request", "response", "request"]
    recorder.close()


def test_warcinfo_names_the_crawler_and_its_settings_with_secrets_hidden_as_config_show_hides_them() -> None:
    info = warcinfo(Settings(user_agent="Bot/1", http_proxy="http://user:secret@proxy:3128", warc_max_bytes=5_000,
                             headers=("X-Token: tok123",)))
    assert info["software"].startswith("sitemapcrawl/")
    assert info["http-header-user-agent"] == "Bot/1"
    assert info["setting-warc_max_bytes"] == "5000"
    assert info["setting-http_proxy"] == "http://user:(hidden)@proxy:3128"
    for proxy, shown in (("http://APIKEY123@proxy:8080", "http://(hidden)@proxy:8080"),
                         ("http://proxy:8080/?token=abc", "http://proxy:8080/?(hidden)"),
                         ("http://proxy:8080", "http://proxy:8080")):
        assert warcinfo(Settings(user_agent="Bot/1", http_proxy=proxy))["setting-http_proxy"] == shown
    assert "X-Token" in info["setting-headers"]
    assert "secret" not in "".join(info.values()) and "tok123" not in "".join(info.values())


def test_the_recorder_redacts_the_headers_the_settings_add_beside_the_credentials(tmp_path: Path) -> None:
    recorder = open_recorder(Settings(warc_dir=str(tmp_path), headers=("X-Token: tok123", "Accept-Language: fr")))
    assert recorder is not None
    assert recorder.redact == {"authorization", "proxy-authorization", "cookie", "x-token", "accept-language"}
    recorder.close()


def test_no_folder_means_no_recorder_and_no_warcio_means_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    assert open_recorder(Settings()) is None
    monkeypatch.setitem(sys.modules, "warcio.warcwriter", None)
    with pytest.raises(UsageError, match=r"pip install 'sitemapcrawl\[warc\]'"):
        open_recorder(Settings(warc_dir=str(tmp_path)))


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(UsageError, match=r"^WARC folder .*file/warc: "):
        open_recorder(Settings(warc_dir=str(tmp_path / "file" / "warc")))


def test_fetch_with_an_unusable_folder_says_so_in_one_line_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    result = cli(Settings(hbase="127.0.0.1:1", table_prefix="none_"), "fetch", "--batch", "b1",
                 "--warc", str(tmp_path / "file" / "warc"), user_agent="T/1")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "WARC folder" in result.stderr
    assert "Traceback" not in result.stderr


def _dead_run(folder: Path, exchanges: int) -> Path:
    """The `.open` file a recorder left when its process was killed (a child that SIGKILLs itself)."""
    import pickle
    import subprocess
    import textwrap

    script = textwrap.dedent(f"""
        import os, pickle, signal
        from pathlib import Path
        from sitemapcrawl.web.warc import WarcRecorder
        recorder = WarcRecorder(Path({str(folder)!r}), 10_000_000, {{}})
        recorder._open()
        for _ in range({exchanges}):
            recorder.record(pickle.loads({pickle.dumps(exchange())!r}))
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    (left,) = folder.glob("*.warc.gz.open")
    return left


def test_a_dead_runs_open_file_is_cut_after_its_last_whole_record_and_renamed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    left = _dead_run(tmp_path, 2)
    whole = left.stat().st_size
    with left.open("ab") as stream:  # a record torn by the kill: half a gzip member
        stream.write(gzip.compress(b"WARC/1.1\r\n" + os.urandom(5000))[:300])
    live = WarcRecorder(tmp_path, 10_000_000, {})  # a recorder made in the folder closes the dead run's file
    live.record(exchange())  # ...and its own, open and locked, is no dead run's file
    assert WarcRecorder(tmp_path, 10_000_000, {}).files == []
    final = left.with_name(left.name.removesuffix(".open"))
    assert not left.exists() and final.stat().st_size == whole
    assert [r[1] for r in records(final)] == ["warcinfo", "response", "request", "response", "request"]
    assert f"{left.name} was left open by a run that died: closed as {final.name} (5 whole records, a torn " \
           "last record of 300 bytes cut)" in caplog.text
    assert len(list(tmp_path.glob("*.open"))) == 1  # the live recorder's, still being written
    live.close()
    assert list(tmp_path.glob("*.open")) == []


def test_a_dead_runs_file_without_a_whole_record_is_removed(tmp_path: Path) -> None:
    left = _dead_run(tmp_path, 0)  # the warcinfo record alone: whole
    left.write_bytes(left.read_bytes()[:20])  # torn in its first record
    WarcRecorder(tmp_path, 10_000_000, {})
    assert list(tmp_path.iterdir()) == []


def test_whole_members_stop_at_the_first_torn_or_bad_one() -> None:
    import io

    members = [gzip.compress(bytes(n) * 1000) for n in (1, 300, 5)]
    data = b"".join(members)
    assert whole_members(io.BytesIO(data), chunk=7) == (len(data), 3)
    assert whole_members(io.BytesIO(data[:-3]), chunk=64) == (len(data) - len(members[-1]), 2)
    assert whole_members(io.BytesIO(data + b"not gzip at all"), chunk=64) == (len(data), 3)
    assert whole_members(io.BytesIO(b"")) == (0, 0)


class _FullDisk:
    """A file whose writes fail after `room` bytes, as a full disk's do (ENOSPC), having written part."""

    def __init__(self, real: Any, room: int) -> None:
        self.real, self.room = real, room

    def write(self, data: Any) -> int:
        if len(data) > self.room:
            written = self.real.write(bytes(data[:self.room]))
            self.room = 0
            if written:
                return int(written)
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return int(self.real.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_write_that_fails_cuts_the_file_back_to_a_whole_record_and_close_never_raises(tmp_path: Path) -> None:
    recorder = WarcRecorder(tmp_path, 10_000_000, {})
    first = recorder.record(exchange())
    assert recorder._file is not None
    recorder._file = _FullDisk(recorder._file, 500)  # type: ignore[assignment]
    with pytest.raises(OSError, match="No space left"):
        recorder.record(exchange())
    recorder.close()  # nothing left to close: no error
    (closed,) = tmp_path.iterdir()
    assert closed.name == first.file  # renamed at the failure: no .open file
    assert [r[1] for r in records(closed)] == ["warcinfo", "response", "request"]  # the torn one is gone
    second = recorder.record(exchange())  # room again: a new file of the series
    assert second.file != first.file
    (tmp_path / f"{second.file}.open").unlink()  # a folder gone from under it: close says so, never raises
    recorder.close()
