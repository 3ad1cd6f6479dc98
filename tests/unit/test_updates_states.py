"""Knowledge updates, the parts without a backend: which memories state one attribute
(``core/retrieval/states.py``), the offline extractor's state facts, and how facts merge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.adapters.reflectors.rule_based.extractors.states import state_attribute
from hindsight.core.fact_merge import FactMerger
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactCategory,
    FactStatus,
    StoredVector,
)
from hindsight.core.retrieval.states import (
    Statement,
    asks_about_past,
    order_states,
    reference_time,
    same_attribute,
    same_state,
)

T0 = datetime(2026, 1, 10, 9, tzinfo=UTC)


def episode(memory_id: str, content: str, days: float, speaker: str | None = None):
    moment = T0 + timedelta(days=days)
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
        speaker=speaker,
    )


def vector(*values: float) -> StoredVector:
    raw = np.asarray(values, dtype=np.float32)
    return StoredVector(model="m", values=raw / np.linalg.norm(raw))


# --- which memories state one attribute ---------------------------------------------------


def test_two_states_of_one_attribute_are_ordered_newest_first_and_the_old_one_reported():
    old = episode("old", "I live in Beijing, near the river.", 0)
    noise = episode("noise", "We had ramen downtown, the broth was great.", 30)
    new = episode("new", "I moved last month, I live in Shanghai now.", 150)
    vectors = {"old": vector(1, 0.5, 0), "new": vector(1, 0, 0.3), "noise": vector(0, 1, 1)}
    got = order_states([old, noise, new], vectors, T0 + timedelta(days=160), True)
    assert got.order == ["new", "noise", "old"]  # the group's positions, newest first
    assert got.updated_by == {"old": "new"}


def test_a_past_reference_puts_the_state_of_that_time_first_and_reports_no_update():
    old = episode("old", "I live in Beijing.", 0)
    new = episode("new", "I moved, I live in Shanghai now.", 150)
    vectors = {"old": vector(1, 0.5), "new": vector(1, -0.1)}
    got = order_states([new, old], vectors, T0 + timedelta(days=20), True)
    assert got.order == ["old", "new"]
    assert got.updated_by == {}  # in January nothing had replaced it yet


def test_without_reordering_the_order_stays_and_the_update_is_still_reported():
    old = episode("old", "I live in Beijing.", 0)
    new = episode("new", "I live in Shanghai now.", 150)
    vectors = {"old": vector(1, 0.5), "new": vector(1, -0.1)}
    got = order_states([old, new], vectors, T0 + timedelta(days=160), False)
    assert got.order == ["old", "new"]
    assert got.updated_by == {"old": "new"}


@pytest.mark.parametrize(
    ("older", "newer", "cosine", "same"),
    [
        ("I live in Beijing.", "I moved to Shanghai last month.", 0.8, True),
        ("我住在北京。", "我上个月搬到上海了。", 0.8, True),
        ("My phone is a Pixel 7.", "I switched to a new phone, a Galaxy.", 0.8, True),
        # additive: a second cat, another language
        ("I have a cat called Luna.", "We adopted a second cat, Milo.", 0.9, False),
        ("我会说英语。", "我现在也会说日语了。", 0.9, False),
        # a question states nothing
        ("I live in Beijing.", "Where do you live now?", 0.9, False),
        # the same statement again is no update
        ("I live in Beijing.", "I live in Beijing.", 0.99, False),
        # unrelated vectors, though a pattern matches both
        ("I live in Beijing.", "The dentist lives next door.", 0.3, False),
        # no shared attribute word and no change cue
        ("I read a novel.", "I baked bread.", 0.95, False),
    ],
)
def test_same_attribute(older: str, newer: str, cosine: float, same: bool) -> None:
    a = Statement.of(episode("a", older, 0))
    b = Statement.of(episode("b", newer, 30))
    assert same_attribute(a, b, cosine) is same


def test_statements_of_different_speakers_are_never_one_state():
    a = Statement.of(episode("a", "I live in Beijing.", 0, speaker="Caroline"))
    b = Statement.of(episode("b", "I live in Shanghai now.", 30, speaker="Melanie"))
    assert not same_attribute(a, b, 0.95)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # genuine updates, with and without a cue word
        (
            "I live in Austin, in a small flat near the river.",
            "My flat in Denver gets great light.",
        ),
        ("I work at Globex as a data analyst.", "First week at Initech went well."),
        ("I work at Globex as a data analyst.", "I quit Globex and joined Initech last week."),
        (
            "My girlfriend Emma and I have been together for years.",
            "Emma and I broke up. I am seeing Sofia now.",
        ),
        ("I drive a Honda Civic to work every day.", "I sold my car and switched to a Mazda 3."),
        ("我住在上海，离公司不远。", "深圳这边的房子采光很好，住着很舒服。"),
        ("我在腾讯上班，做数据分析。", "上周我在字节跳动正式入职，同事都挺好的。"),
        ("我和小雨在一起两年了，她是我女朋友。", "我和小雨分手了，现在的女朋友是晓晴。"),
        ("我每周一和三去健身房。", "我把健身时间改到了每周二和四。"),
        ("I stick to a vegan diet.", "I've given up the vegan diet and eat keto now."),
        ("My only pet is a beagle.", "We rehomed the beagle and have a labrador now."),
        ("我在学法语。", "我不学法语了，现在改学韩语。"),
        ("我的家庭医生是何医生。", "我换了家庭医生，现在找周医生看病。"),
        # the value read from what follows the attribute's verb
        ("我住在南京，离公司很近。", "我搬到了苏州，房租便宜多了。"),
        ("我们住在天津。", "我们搬去了大连，离海边很近。"),
        ("我在华为上班。", "现在在字节跳动上班，挺忙的。"),
        ("我在美团做产品经理。", "入职拼多多快一个月了。"),
        ("I work for Deloitte as an auditor.", "I'm now at KPMG, same kind of work."),
        ("I live in Manchester.", "These days I rent a little place in Bristol."),
        # the older value named as ended, the attribute not named
        ("我开的是比亚迪秦。", "我把比亚迪秦卖了，现在开本田思域。"),
        ("我在社区乐团里弹小提琴。", "去年我从小提琴改成了古筝。"),
        ("I work at Zalando.", "Handed in my badge at Zalando and joined Booking.com."),
        # a habit states its value's attribute; "改喝" ends the old drink
        ("My main workout is running.", "Three sessions of rowing a week, my shoulders ache."),
        ("我每天早上喝咖啡。", "改喝茶了，咖啡喝多了心慌。"),
        ("我早上一般喝豆浆。", "每天早上一杯燕麦奶，舒服。"),
        # "排第二" ends the old favourite, it adds nothing
        ("我最喜欢吃火锅。", "现在我最爱的是饺子，火锅排第二了。"),
        # other phrasings of both languages
        ("我家在西安，离钟楼不远。", "去年我们全家搬到了昆明，四季如春。"),
        ("我现在的工作单位是中国移动。", "我已经跳槽到了华为，待遇好了不少。"),
        ("我老公叫刘洋。", "我再婚了，现在的丈夫叫赵磊。"),
        ("我在南京大学读本科。", "我转到了东南大学，专业也换了。"),
        ("我养了一只金毛。", "金毛送人了，现在家里只有一只布偶猫。"),
        ("My employer is Siemens.", "Started a new job at Bosch last month."),
        ("My husband's name is Peter.", "My new husband Jonas and I got married in June."),
        ("I have a VW Golf.", "Just bought a Kia Niro, the Golf is gone."),
        ("My bank is Halifax.", "I opened an account with Nationwide and moved everything over."),
        ("Basketball is my sport.", "I play tennis twice a week now."),
        ("I drink tea in the morning.", "Black coffee is what gets me going every morning now."),
        # "my boss" is the user's own manager
        ("My boss is Alan.", "My manager Tomasz approved my leave in five minutes."),
    ],
)
def test_a_new_value_of_the_same_attribute_is_an_update(older: str, newer: str) -> None:
    a, b = Statement.of(episode("a", older, 0)), Statement.of(episode("b", newer, 60))
    assert same_attribute(a, b, 0.85)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # a newer memory that changes nothing: unrelated, though a word is shared
        ("I live in Berlin.", "I moved my desk closer to the window."),
        ("The user drives a blue Toyota Corolla.", "The user bought new running shoes."),
        ("I work at Globex as a data analyst.", "I switched the lights off at the office."),
        ("我在学法语。", "我换了一张升降桌。"),
        ("我在腾讯上班。", "我们公司新来了一个同事。"),
        # about the same thing, consistent
        ("I drive a Toyota Corolla.", "My Toyota needs new tyres before winter."),
        ("I work at Globex as a data analyst.", "I still love my job at Globex."),
        ("我住在杭州。", "杭州最近一直下雨。"),
        ("我开的是一辆比亚迪汉。", "我的比亚迪该保养了。"),
        # the same attribute of another person
        ("I live in Berlin.", "My sister lives in Rome now."),
        ("My phone is a Pixel 7.", "My dad switched to an iPhone 15."),
        ("我用的手机是华为Mate 60。", "我妈妈换了新手机，是小米14。"),
        ("我住在杭州。", "我姐姐搬到成都了。"),
        ("My manager is Marcus.", "My wife's manager is Oliver."),
        ("My favourite food is sushi.", "My teenage son says ramen is his favourite food."),
        ("我的经理是李娜。", "我老婆的经理是陈静。"),
        ("我最喜欢吃小龙虾。", "我老公最喜欢吃烤鸭。"),
        ("我早上固定喝红茶。", "我爸早上离不开拿铁。"),
        # a word of the attribute naming a thing, or a value of another kind
        ("I drive a Ford Focus.", "The car park at the supermarket was full again."),
        ("My current account is with ING.", "The food bank needs volunteers on Saturdays."),
        ("My morning drink is always matcha.", "The coffee table wobbles, I need to fix it."),
        ("I live in Melbourne.", "We moved the piano into the living room."),
        (
            "My partner Emma and I have been together for years.",
            "I'm seeing the dentist on Friday.",
        ),
        ("我家就一只宠物，是布偶猫。", "看了一部讲非洲野狗的纪录片。"),
        ("我住在青岛。", "我把书桌搬到了窗户旁边，光线好多了。"),
        ("我每天坐班车上班。", "周末坐火车去看了爷爷奶奶。"),
        ("我主要的运动是瑜伽，一周三次。", "今天早上瑜伽状态特别好。"),
        ("我住在深圳，离公司不远。", "我老家在湖南衡阳，父母开了一家小饭馆。"),
        ("I live in Leeds.", "My hometown is York, I grew up there."),
        # a wish, plan or supposition states no present value
        ("I live in Cork.", "If I moved to Galway I'd be closer to the sea."),
        ("I drink coffee every morning.", "Maybe I should switch to green tea."),
        ("I'm based in Austin.", "One day I'd love to live in Denver."),
        ("我住在北京朝阳区。", "我想搬到大理去，过慢一点的生活。"),
        ("我在阿里巴巴工作。", "如果去腾讯工作，工资能多三成。"),
        ("我住在成都。", "要是能搬到重庆，离爸妈就近了。"),
        # a state of long ago only
        ("I live in Manchester.", "I lived in Edinburgh as a kid and still miss it."),
        ("I work at Spotify.", "Back in college I worked at a Starbucks in Austin."),
        ("我住在南京。", "小时候我住在哈尔滨，冬天特别冷。"),
        ("我开丰田凯美瑞。", "我的第一辆车是一辆二手的桑塔纳。"),
        # the same value again, with a cue word
        ("I work at Spotify.", "These days I'm still at Spotify, five years now."),
        ("我在华为上班。", "我现在在华为上班，快五年了。"),
        # a thing moved ("把"), another person ("我哥"), a place where a person is asked
        ("我住在南京。", "我把沙发搬到了阳台边上。"),
        ("我开的是大众帕萨特。", "我哥提了一辆特斯拉，天天炫耀。"),
        ("My wife is Claire.", "I'm now reading a novel about a divorced detective in Oslo."),
        ("我的家庭医生是社区医院的何医生。", "何医生很痛快地给我续开了药。"),
        ("我住在青岛。", "我把书桌搬到了客厅。"),
        ("I'm learning Italian.", "I'm learning Japanese now too, alongside my Italian."),
        # a name said again with a possessive is no new value
        ("Ruby's lost her school jumper twice.", "Ruby's cast left her scared of climbing."),
    ],
)
def test_a_newer_memory_without_a_new_value_of_the_same_attribute_is_no_update(
    older: str, newer: str
) -> None:
    a, b = Statement.of(episode("a", older, 0)), Statement.of(episode("b", newer, 60))
    assert not same_attribute(a, b, 0.85)


def test_reference_time_and_past_questions():
    as_of = T0 + timedelta(days=200)
    january = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))
    assert reference_time("where does the user live?", as_of, None, None) == (as_of, True)
    assert reference_time("where did the user live in January?", as_of, *january) == (
        january[1],
        True,
    )
    assert reference_time("where did the user live before?", as_of, None, None) == (
        as_of,
        False,
    )
    assert asks_about_past("用户以前住在哪里？") and not asks_about_past("用户住在哪里？")


def test_same_state_tells_values_apart_and_ignores_change_cues():
    assert same_state("The user lives in Beijing.", "The user lives in Beijing now.")
    assert not same_state("The user lives in Beijing.", "The user lives in Shanghai.")
    assert not same_state("用户住在北京。", "用户现在住在上海。")


# --- the offline extractor's state facts --------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "attribute"),
    [
        ("I moved last month, I live in Shanghai now.", "residence"),
        ("Finally relocated to Lisbon.", "residence"),
        ("I switched jobs, I am at Globex now.", "employer"),
        ("After the reorg Priya is my manager now.", "manager"),
        ("I am no longer vegetarian.", "diet"),
        ("我上个月搬家了，现在住在杭州。", "residence"),
        ("组织调整以后，我的经理换成了李娜。", "manager"),
        ("我把车换成了比亚迪汉。", "vehicle"),
        ("我们又领养了一只猫，叫球球。", "pets"),
        # not states of the speaker
        ("My sister lives in Paris.", None),
        ("I am going to move to Berlin next year.", None),
        ("Where do you live?", None),
        ("我妹妹住在巴黎。", None),
        ("我打算明年搬到柏林。", None),
        # a wish or supposition, or a state of long ago: no state that holds now
        ("If I moved to Galway I would be closer to the sea.", None),
        ("I lived in Edinburgh as a kid and still miss it.", None),
        ("要是搬到大理就好了，我想住在海边。", None),
        ("小时候我住在哈尔滨。", None),
        # ... while a state said to hold now, after an old one, stays one
        ("I lived in Leeds years ago, but I live in York now.", "residence"),
        ("我以前住在哈尔滨，现在住在大连。", "residence"),
    ],
)
def test_state_statements(sentence: str, attribute: str | None) -> None:
    zh = any("\u4e00" <= ch <= "\u9fff" for ch in sentence)
    assert state_attribute(sentence, zh) == attribute


def reflect(texts: list[str]) -> list[ExtractedFact]:
    episodes = [episode(f"m{i}", text, 60 * i) for i, text in enumerate(texts)]
    return RuleBasedReflector().reflect("u1", episodes, []).facts


def test_every_state_of_a_batch_is_kept_oldest_first_under_one_topic():
    facts = reflect(["I live in Beijing.", "I watched a film.", "I moved to Shanghai in May."])
    states = [f for f in facts if f.topic == "state:residence"]
    assert [f.source_memory_ids for f in states] == [["m0"], ["m2"]]
    assert "Beijing" in states[0].content and "Shanghai" in states[1].content


def test_an_additive_update_gets_its_own_topic():
    facts = reflect(["我会说英语。", "学了两年，我现在也会说日语了。"])
    topics = {f.topic for f in facts}
    assert len([t for t in topics if t.startswith("state:languages")]) == 2


# --- merging facts ------------------------------------------------------------------------


def merger(live, vectors):  # type: ignore[no-untyped-def]
    count = iter(range(100))
    return FactMerger(
        "t1", "u1", T0 + timedelta(days=300), live, vectors, lambda: f"f{next(count)}", False
    )


def extracted(content: str, topic: str, source: str) -> ExtractedFact:
    return ExtractedFact(content, FactCategory.FACT, Confidence.MEDIUM, [source], topic)


def test_a_new_state_supersedes_the_old_with_both_linked_and_validity():
    episodes = {"e1": episode("e1", "I live in Beijing.", 0), "e2": episode("e2", "...", 150)}
    merge = merger([], {})
    near = vector(1, 0.01)
    merge.merge(
        "global",
        extracted("The user lives in Beijing.", "state:residence", "e1"),
        near,
        episodes,
        "r",
    )
    merge.merge(
        "global",
        extracted("The user lives in Shanghai now.", "state:residence", "e2"),
        vector(1, 0.02),
        episodes,
        "r",
    )
    old, new = merge.created["f0"], merge.created["f1"]
    assert old.status == FactStatus.SUPERSEDED and old.superseded_by == "f1"
    assert new.supersedes == ["f0"] and new.source_memory_ids == ["e2"]
    assert old.valid_from == episodes["e1"].occurred_at
    assert old.valid_until == new.valid_from == episodes["e2"].occurred_at
    assert old.valid_at(T0 + timedelta(days=10)) and not old.valid_at(T0 + timedelta(days=200))
    assert new.valid_at(T0 + timedelta(days=200)) and not new.valid_at(T0)


def test_near_identical_wording_of_another_topic_is_no_repeat():
    episodes = {"e1": episode("e1", "I like Beijing.", 0), "e2": episode("e2", "...", 150)}
    merge = merger([], {})
    same_vector = vector(1, 0.001)  # as alike as two sentences get
    merge.merge(
        "global",
        extracted("The user likes Beijing.", "preference:beijing", "e1"),
        same_vector,
        episodes,
        "r",
    )
    merge.merge(
        "global",
        extracted("The user now likes Shanghai.", "preference:shanghai", "e2"),
        same_vector,
        episodes,
        "r",
    )
    assert {f.content for f in merge.created.values()} == {
        "The user likes Beijing.",
        "The user now likes Shanghai.",
    }


def test_the_same_state_again_is_a_repeat():
    episodes = {"e1": episode("e1", "I live in Beijing.", 0), "e2": episode("e2", "...", 150)}
    merge = merger([], {})
    merge.merge(
        "global",
        extracted("The user lives in Beijing.", "state:residence", "e1"),
        vector(1, 0.01),
        episodes,
        "r",
    )
    merge.merge(
        "global",
        extracted("The user lives in Beijing now.", "state:residence", "e2"),
        vector(1, 0.011),
        episodes,
        "r",
    )
    (only,) = merge.created.values()
    assert only.source_memory_ids == ["e1", "e2"] and only.mention_count == 2


def test_only_the_states_the_query_asks_about_are_reordered():
    old = episode("old", "I live in Beijing.", 0)
    new = episode("new", "I moved, I live in Shanghai now.", 150)
    vectors = {"old": vector(1, 0.5), "new": vector(1, -0.1)}
    later = T0 + timedelta(days=160)
    asked_other = order_states([old, new], vectors, later, True, "What pets does the user have?")
    assert asked_other.order == ["old", "new"] and asked_other.updated_by == {"old": "new"}
    asked_this = order_states([old, new], vectors, later, True, "Where does the user live?")
    assert asked_this.order == ["new", "old"]
    asked_now = order_states([old, new], vectors, later, True, "What is new with the user now?")
    assert asked_now.order == ["new", "old"]


def test_the_llm_reflectors_are_asked_for_state_topics_and_additive_updates():
    from hindsight.adapters.reflectors.llm import REFLECTION_SYSTEM_PROMPT as prompt

    assert "state:residence" in prompt and "superseded" in prompt
    assert "换成了" in prompt and "不再" in prompt and "second cat" in prompt


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        (
            "今天正式入职新公司了，做游戏服务端，用Go写。",
            "新公司在南山后海，从龙华过去要一个半小时。",
        ),
        (
            "I started at Initech today, writing Go.",
            "Initech's office is in Soho, an hour from Camden.",
        ),
    ],
)
def test_statements_of_one_session_or_one_hour_elaborate_a_state(older: str, newer: str) -> None:
    same_session = [
        episode("a", older, 0).model_copy(update={"session_id": "s1"}),
        episode("b", newer, 3).model_copy(update={"session_id": "s1"}),
    ]
    minutes_apart = [episode("a", older, 0), episode("b", newer, 0.01)]
    for first, second in (same_session, minutes_apart):
        assert not same_attribute(Statement.of(first), Statement.of(second), 0.85)


def test_a_change_said_within_one_session_waits_for_a_later_one() -> None:
    older, newer = "I live in Austin.", "I moved, I live in Denver now."
    apart = Statement.of(episode("a", older, 0)), Statement.of(episode("b", newer, 30))
    assert same_attribute(*apart, 0.85)
    in_session = [
        Statement.of(episode(i, text, day).model_copy(update={"session_id": "s1"}))
        for i, text, day in (("a", older, 0), ("b", newer, 0.5))
    ]
    assert not same_attribute(*in_session, 0.85)
