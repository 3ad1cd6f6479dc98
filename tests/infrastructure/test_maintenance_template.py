"""template.yaml: the maintenance run is a second ScheduleV2 with its own DLQ and alarm."""

from __future__ import annotations

import pytest
import yaml

from tests.infrastructure.test_template import TEMPLATE, _CfnLoader


@pytest.fixture(scope="module")
def template() -> dict:
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)


def test_maintenance_runs_daily_at_three_with_a_dead_letter_queue(template: dict) -> None:
    assert template["Parameters"]["MaintenanceScheduleExpression"]["Default"] == (
        "cron(0 3 * * ? *)"
    )
    props = template["Resources"]["MaintainFunction"]["Properties"]
    assert props["CodeUri"] == "functions/maintain/"
    (event,) = props["Events"].values()
    assert event["Type"] == "ScheduleV2"
    schedule = event["Properties"]
    assert schedule["ScheduleExpression"] == "MaintenanceScheduleExpression"  # !Ref
    assert schedule["ScheduleExpressionTimezone"] == "ReflectionScheduleTimezone"
    assert schedule["DeadLetterConfig"]["Arn"] == "MaintenanceScheduleDeadLetterQueue.Arn"
    alarm = template["Resources"]["MaintenanceScheduleDeadLetterAlarm"]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == "MaintenanceScheduleDeadLetterQueue.QueueName"
    assert set(props["Policies"]) == {
        "MemoriesTableReadPolicy",
        "MemoriesTableWritePolicy",
        "OpenSearchAccessPolicy",
    }


def test_restore_is_served_by_the_forget_function(template: dict) -> None:
    events = template["Resources"]["ForgetFunction"]["Properties"]["Events"]
    assert events["RestoreMemory"]["Properties"]["Path"] == "/v1/memories/{memory_id}/restore"
    assert events["RestoreMemory"]["Properties"]["Method"] == "POST"
