"""Time expressions in English and Chinese, resolved to absolute day ranges.

``resolve_time_expressions`` finds the times a memory's content talks about
("next week", "三天后", "on May 7") and resolves them against the moment the memory
happened. ``parse_query_time`` finds the time a question is about ("what did I do
last week?", "最近三天") for boosting and narrowing retrieval.

Conventions: day granularity in UTC, ranges are ``[start, end)``, weeks start on
Monday, the weekend is Saturday and Sunday. Ambiguous words are resolved this way:

* "next Friday" / "下周五" is the Friday of next week; "this Friday" / "on Friday" /
  "周五" is the coming Friday (today when today is Friday); "这周五" / "本周五" is the
  Friday of this week even when it has passed; "last Friday" is the most recent
  Friday before today and "上周五" the Friday of last week.
* A month and day without a year ("May 7", "5月7日") is taken in the reference year,
  unless that date lies more than half a year in the past: then it is next year's.
* "recently" / "最近" in a question is the last 7 days; "in the last N days" /
  "最近N天" is the N days before today plus today.

The modules: ``days`` (day ranges and calendar arithmetic), ``patterns`` (the pattern
table's shape and the resolvers both languages share), ``english`` and ``chinese`` (each
language's words, regular expressions and resolvers), ``scanning`` (finding expressions
in a text and the two entry points above).
"""

from hindsight.core.temporal.scanning import parse_query_time, resolve_time_expressions

__all__ = ["parse_query_time", "resolve_time_expressions"]
