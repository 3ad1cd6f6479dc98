"""``server.json``: written by the server, followed only while its server lives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hindsight.server.discovery import (
    SERVER_FILE,
    client_url,
    find_server,
    read_record,
    remove_record,
    write_record,
)


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_wildcard_bind_is_reached_on_loopback() -> None:
    assert client_url("0.0.0.0", 8080) == "http://127.0.0.1:8080"
    assert client_url("::", 8080) == "http://[::1]:8080"
    assert client_url("127.0.0.1", 9) == "http://127.0.0.1:9"
    assert client_url("192.168.1.5", 80) == "http://192.168.1.5:80"


def test_the_record_round_trips_and_is_removed_by_its_writer(tmp_path: Path) -> None:
    record = write_record(tmp_path, "http://127.0.0.1:1", keys_required=True)

    assert read_record(tmp_path) == record
    assert not list(tmp_path.glob(".server.json.*"))  # no partial file left
    remove_record(tmp_path)
    assert not (tmp_path / SERVER_FILE).exists()


def test_another_servers_record_is_not_removed(tmp_path: Path) -> None:
    write_record(tmp_path, "http://127.0.0.1:1", keys_required=False)
    path = tmp_path / SERVER_FILE
    record = json.loads(path.read_text())
    record["pid"] = _dead_pid()
    path.write_text(json.dumps(record))

    remove_record(tmp_path)

    assert path.exists()


def test_a_record_of_a_dead_process_is_ignored(tmp_path: Path) -> None:
    write_record(tmp_path, "http://127.0.0.1:1", keys_required=False)
    path = tmp_path / SERVER_FILE
    record = json.loads(path.read_text())
    record["pid"] = _dead_pid()
    path.write_text(json.dumps(record))

    assert read_record(tmp_path) is not None
    assert find_server(tmp_path) is None


def test_a_live_process_whose_address_does_not_answer_is_ignored(tmp_path: Path) -> None:
    # this process is alive, and nothing listens on port 1
    write_record(tmp_path, "http://127.0.0.1:1", keys_required=False)

    assert find_server(tmp_path) is None


def test_no_file_or_a_broken_one_means_no_server(tmp_path: Path) -> None:
    assert find_server(tmp_path) is None
    (tmp_path / SERVER_FILE).write_text("{not json")
    assert find_server(tmp_path) is None
    (tmp_path / SERVER_FILE).write_text('{"url": "http://127.0.0.1:1"}')
    assert find_server(tmp_path) is None
