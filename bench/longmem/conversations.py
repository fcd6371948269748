"""The benchmark's six conversations: who talks, for how long, and which stories they tell."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.longmem import chatter_en, chatter_zh, stories_en, stories_zh
from bench.longmem.make import Library, Member, Plan

EN = Library(
    stories=stories_en.STORIES,
    chatter=chatter_en.CHATTER,
    greetings=chatter_en.GREETINGS,
    farewells=chatter_en.FAREWELLS,
    asides=chatter_en.ASIDES,
    pools=chatter_en.POOLS,
    themed={
        "en2": chatter_en.THEMED["team"],
        "en3": chatter_en.THEMED["family"],
        "en4": chatter_en.THEMED["club"],
    },
)
ZH = Library(
    stories=stories_zh.STORIES,
    chatter=chatter_zh.CHATTER,
    greetings=chatter_zh.GREETINGS,
    farewells=chatter_zh.FAREWELLS,
    asides=chatter_zh.ASIDES,
    pools=chatter_zh.POOLS,
    themed={"zh1": chatter_zh.THEMED["friends"], "zh2": chatter_zh.THEMED["family"]},
)


def _told(stories: str) -> tuple[str, ...]:
    """Story keys (``stories_en.py``, ``stories_zh.py``), separated by white space."""
    return tuple(stories.split())


def _people(*spec: str) -> tuple[Member, ...]:
    """``"id|Display name|f"`` each (``m`` or ``f``: the pronouns stories use)."""
    return tuple(Member(*item.split("|")) for item in spec)


PLANS = (
    Plan(
        id="en1",
        language="en",
        title="weekend crew: four friends",
        people=_people("maya|Maya|f", "jonah|Jonah|m", "priya|Priya|f", "leo|Leo|m"),
        start=datetime(2025, 1, 10, 19, 0, tzinfo=UTC),
        sessions=34,
        messages=1000,
        gap_days=6.5,
        hours=(17, 23),
        stories=_told(
            """
            dog adopted allergy sister job move birthday car driving keys engaged ankle owes
            restaurant hobby language partner garden gig bookclub cabin potluck gamenight coffee
            holiday recipe rent sparekey shows veggie interrail movingday birthdaydinner doctor
            hobby owes promotion bike tattoo venue flight doorcode dog interrail birthday
            """
        ),
        library=EN,
    ),
    Plan(
        id="en2",
        language="en",
        title="studio social: a design team's off-topic channel",
        people=_people(
            "ines|Ines|f", "tom|Tom|m", "harriet|Harriet|f", "dev|Dev|m", "oskar|Oskar|m"
        ),
        start=datetime(2025, 3, 3, 9, 0, tzinfo=UTC),
        sessions=36,
        messages=850,
        gap_days=4.0,
        hours=(8, 17),
        stories=_told(
            """
            standup offsite launch newhire cover allergy coffee birthday dog job owes restaurant
            language ankle keys engaged driving shows potluck gig sister hobby birthdaydinner
            movingday doctor interrail rent car bookclub gamenight holiday recipe veggie coffee
            promotion bike tattoo flight doorcode newhire venue pb
            """
        ),
        library=EN,
    ),
    Plan(
        id="en3",
        language="en",
        title="the Hartleys: a family",
        people=_people(
            "linda|Linda|f", "mark|Mark|m", "ellie|Ellie|f", "josh|Josh|m", "jean|Nana Jean|f"
        ),
        start=datetime(2025, 2, 1, 8, 0, tzinfo=UTC),
        sessions=30,
        messages=750,
        gap_days=6.0,
        hours=(7, 22),
        stories=_told(
            """
            nana@B=jean firstword@A=ellie school@A=ellie kitchen@A=linda
            shoesize@A=linda,B=ellie christmas@A=linda dog@A=mark allergy@A=josh car@A=mark
            driving@A=josh keys@A=ellie engaged@A=josh birthday@A=jean holiday@A=linda
            recipe@A=jean rent@A=josh sparekey@A=jean doctor@A=mark garden@A=jean job@A=josh
            hobby@A=jean owes@A=ellie,B=josh restaurant movingday@A=ellie interrail@A=josh
            birthdaydinner@A=linda shows@A=mark coffee@A=ellie partner@A=ellie veggie@A=ellie
            venue@A=josh flight@A=linda doorcode@A=linda promotion@A=ellie bike@A=josh
            tattoo@A=ellie potluck@A=mark school@A=josh
            """
        ),
        library=EN,
    ),
    Plan(
        id="en4",
        language="en",
        title="Riverside Runners: a running club",
        people=_people("bea|Bea|f", "nate|Nate|m", "olu|Olu|m", "freya|Freya|f"),
        start=datetime(2025, 4, 7, 6, 30, tzinfo=UTC),
        sessions=26,
        messages=560,
        gap_days=3.5,
        hours=(6, 21),
        stories=_told(
            """
            pb meet kit entered trainers ankle marathon allergy coffee birthday dog job car keys
            gig interrail doctor birthdaydinner potluck owes hobby language veggie restaurant
            shows pb entered promotion bike flight doorcode meet tattoo
            """
        ),
        library=EN,
    ),
    Plan(
        id="zh1",
        language="zh",
        title="大学同学群",
        people=_people("xiaofeng|晓峰|m", "wanglei|王磊|m", "siyuan|思远|m", "xiaoyu|小雨|f"),
        start=datetime(2025, 2, 15, 12, 0, tzinfo=UTC),
        sessions=32,
        messages=880,
        gap_days=5.5,
        hours=(11, 16),
        stories=_told(
            """
            zh_dog zh_allergy zh_job zh_move zh_wedding zh_license zh_birthday zh_car zh_baby
            zh_party zh_ielts zh_gym zh_rent zh_hometown zh_trip zh_owe zh_food zh_hobby
            zh_ankle zh_gamenight zh_nocilantro zh_movehelp zh_doctor zh_travel zh_cat zh_keys
            zh_birthday zh_hometown zh_owe zh_party zh_job zh_promo zh_bike zh_hotel zh_flight
            zh_phone zh_doorcode zh_dog zh_travel
            """
        ),
        library=ZH,
    ),
    Plan(
        id="zh2",
        language="zh",
        title="相亲相爱一家人",
        people=_people("mama|妈妈|f", "baba|爸爸|m", "linyue|林悦|f", "linhao|林浩|m"),
        start=datetime(2025, 5, 20, 0, 30, tzinfo=UTC),
        sessions=28,
        messages=650,
        gap_days=5.0,
        hours=(0, 14),
        stories=_told(
            """
            zh_bp@A=baba zh_tiles@A=mama zh_school@A=linyue zh_wifi@A=linhao zh_grandma
            zh_train@A=linhao,B=baba zh_fish@A=baba zh_gift@A=linyue,B=linhao,C=baba
            zh_dinner@A=mama zh_dog@A=linyue zh_allergy@A=linhao zh_job@A=linhao zh_car@A=baba
            zh_license@A=linyue zh_birthday@A=mama zh_rent@A=linhao zh_baby@A=linyue
            zh_hobby@A=mama zh_ankle@A=linhao zh_cat@A=linhao zh_keys@A=linyue
            zh_doctor@A=linyue zh_owe@A=linyue,B=linhao zh_food@A=linyue zh_nocilantro@A=linhao
            zh_move@A=linhao zh_travel@A=mama zh_promo@A=linyue zh_bike@A=baba
            zh_flight@A=linhao zh_phone@A=mama zh_doorcode@A=baba zh_hotel@A=linhao zh_party
            zh_movehelp@A=linhao zh_gamenight
            """
        ),
        library=ZH,
    ),
)
