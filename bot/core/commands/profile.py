"""``/remember``, ``/profile``, ``/forget``: what is kept about the person speaking. ``/forget``
deletes the logged prompts of the person's questions too (:mod:`bot.core.ports.prompts`): their
profile was in them."""

from __future__ import annotations

from bot.core.commands.common import NUMBER, error, info, name_of, person_of
from bot.core.engine import Engine
from bot.core.models import CommandCall, FactSource, ProfileFact, Reply
from bot.core.ports.llm import clean_text
from bot.core.prompt.layout import fit_profile, profile_cap, render_profile
from bot.core.wording import counted


async def remember(engine: Engine, call: CommandCall) -> Reply:
    text = clean_text(call.argument).strip()
    if not text:
        return error(
            "Usage: /remember TEXT — a fact about you (name, role, time zone, preferences) "
            "shown to the model whenever you talk to it in this workspace."
        )
    settings = await engine.settings_for(call.conversation)
    cap = profile_cap(settings, engine.budget(settings))
    if cap == 0:
        return error("Profiles are turned off here (memory.profile_tokens is 0).")
    person = person_of(call)
    facts = list(await engine.store.profile_facts(person=person))
    same = next((f for f in facts if f.text.casefold() == text.casefold()), None)
    if same is not None:
        return info(f"Already remembered as #{same.id}: {same.text}", ephemeral=True)
    own = [f for f in facts if f.source is FactSource.USER]
    candidate = ProfileFact(0, person, text, 0, FactSource.USER, 0.0)
    needed = engine.tokenizer.count(render_profile(name_of(call), [*own, candidate]))
    if needed > cap:
        return error(
            f"Not remembered: your facts would take {needed:,} tokens, more than the "
            f"{cap:,} a profile may take in a prompt. Shorten it, or /forget ID something "
            "first (/profile lists them)."
        )
    added = await engine.store.add_profile_fact(
        person=person, text=text, tokens=engine.tokenizer.count(text), source=FactSource.USER
    )
    return info(
        f"Remembered #{added.id}: {text}\nThe model sees it whenever you talk to it in this "
        "workspace. /profile lists what is kept about you; /forget ID removes it.",
        ephemeral=True,
    )


async def profile(engine: Engine, call: CommandCall) -> Reply:
    person = person_of(call)
    facts = await engine.store.profile_facts(person=person)
    if not facts:
        return info(
            "Nothing is kept about you in this workspace. /remember TEXT adds a fact.",
            ephemeral=True,
        )
    settings = await engine.settings_for(call.conversation)
    cap = profile_cap(settings, engine.budget(settings))
    _, shown = fit_profile(engine.tokenizer.count, name_of(call), facts, cap)
    shown_ids = {f.id for f in shown}
    lines = [f"{counted(len(facts), 'fact')} kept about you in this workspace:"]
    for fact in facts:
        origin = "you set it" if fact.source is FactSource.USER else "inferred from conversation"
        left_out = "" if fact.id in shown_ids else "; not in prompts: the profile is full"
        lines.append(f"#{fact.id} ({origin}{left_out}): {fact.text}")
    lines.append("/forget ID removes one; /forget all removes everything.")
    return info("\n".join(lines), ephemeral=True)


async def forget(engine: Engine, call: CommandCall) -> Reply:
    argument = call.argument.strip().lower()
    person = person_of(call)
    if argument == "all":
        removed = await engine.store.remove_profile_facts(person=person, fact_id=None)
        await engine.store.forget_prompts(person=person)
        if not removed:
            return info("Nothing was kept about you in this workspace.", ephemeral=True)
        return info(
            f"Forgot {counted(removed, 'fact')} kept about you in this workspace, inferred ones "
            "too.",
            ephemeral=True,
        )
    match = NUMBER.match(argument)
    if match is None:
        return error("Usage: /forget ID (the number /profile shows), or /forget all.")
    fact_id = int(match.group(1))
    if not await engine.store.remove_profile_facts(person=person, fact_id=fact_id):
        return error(f"There is no fact #{fact_id} in your profile (/profile lists them).")
    await engine.store.forget_prompts(person=person)
    return info(f"Forgot #{fact_id}.", ephemeral=True)
