"""Offline reflector: explicit statements found with patterns, English and Chinese, no LLM.

It extracts only what the user said in so many words: allergies, dietary constraints,
likes and dislikes, names, pets and family, habits, plans and to-dos, and mood
patterns that recur across episodes. Anything said "just for today" ("I don't feel
like Sichuan food today", "今天不想吃川菜") never becomes a lasting preference.
Agent turns are skipped. The same fact found in several episodes becomes one fact
with every source id and confidence raised one step.

Topics are normalised keys of what a fact is about ("allergy:peanut",
"preference:food:sichuan", "habit:activity:running", "plan:beijing-business"):
"I love hiking" and "I no longer like hiking" share one, so the newer supersedes
the older; "allergic to peanuts" and "allergic to shellfish" do not.

The package: ``reflector`` (the port's implementation) runs the ``extractors`` (one module
per kind of fact) over the ``clauses`` of each ``speakers`` turn, adds ``moods`` that recur,
and ``merge``s the candidates; ``summary`` summarises a session. Word tables are data, in
``lexicon/en.json`` and ``lexicon/zh.json``.
"""

from hindsight.adapters.reflectors.rule_based.reflector import LABEL, RuleBasedReflector

__all__ = ["LABEL", "RuleBasedReflector"]
