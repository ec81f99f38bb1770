"""The worlds the simulated agents live in (seed 003's `sim_scenarios`).

A scenario is data: the topics agents work on (each a query and how often it comes up, month by
month), the cards a vault starts with (each with a hidden true usefulness: the chance that an
agent who applies it finds that it helped), the events that change the world on a given day (a
card that becomes wrong, a flood of duplicates), lessons agents learn when a search finds
nothing, and who the agents are (one may reject everything). `sim_driver.py` plays a scenario;
`sim_analysis.py` reads what it recorded. Nothing here touches a vault.
"""

from __future__ import annotations

from dataclasses import dataclass, field


# The chance that a card helps with a problem it is not about: an agent that applies the card a
# search ranked for another topic (it shares words) mostly finds that it does not fit.
OFF_TOPIC = 0.1


@dataclass(frozen=True)
class Card:
    key: str                 # the scenario's name for it (the analysis labels plots with it)
    topic: str
    title: str
    body: str
    tags: tuple[str, ...]
    usefulness: float        # hidden: P(an agent that applies it finds it helped)
    card_type: str = "troubleshooting"
    domain: str = "infra"


@dataclass(frozen=True)
class Topic:
    name: str
    query: str
    weight: float                        # how often it comes up, relative to the others
    active: tuple[int, int] = (0, 10_000)  # the days it comes up at all: [first, last)


@dataclass(frozen=True)
class Lesson:
    """What an agent learns when its search for `topic` finds nothing: an Inbox candidate that,
    seen often enough, `promote --auto` promotes; the card it becomes has `usefulness`."""

    topic: str
    title: str
    problem: str
    solution: str
    tags: tuple[str, ...]
    usefulness: float


@dataclass(frozen=True)
class Scenario:
    name: str
    days: int
    sessions_per_day: int
    topics: tuple[Topic, ...]
    cards: tuple[Card, ...]
    lessons: tuple[Lesson, ...] = ()
    # day -> (card key, new usefulness): the world changed and the card is now wrong (or right)
    changes: tuple[tuple[int, str, float], ...] = ()
    # (day, card key, copies): a flood of near duplicates of that card, each as useful as it
    duplicates: tuple[tuple[int, str, int], ...] = ()
    rejecter_share: float = 0.0          # the share of sessions run by an agent that rejects everything
    promote_every: int = 7               # days between `promote --auto` runs
    decay_after_days: int | None = None  # [confidence] decay_after_days for the vault (None: the default, 90)
    seed: int = 7
    notes: dict = field(default_factory=dict)


def _card(key, topic, title, tags, usefulness, fix):
    body = f"## Symptoms\n{title}.\n\n## Fix\n{fix}\n"
    return Card(key, topic, title, body, tuple(tags), usefulness)


TOPICS = (
    Topic("ecs", "ECS task external API timeout", 3.0),
    Topic("rds", "RDS connection timeout on port 5432", 2.0),
    Topic("pytest", "pytest hangs in CI", 2.0),
    Topic("expo", "Expo app crash on startup react-native-screens", 1.5),
    Topic("alb", "ALB 502 idle timeout keep-alive", 1.5),
    # Asked only in the first two months: its cards go stale and fade.
    Topic("terraform", "terraform rule rename duplicate error", 2.0, active=(0, 60)),
    # No card answers these at first: agents learn lessons into the Inbox.
    Topic("kafka", "kafka consumer lag keeps growing", 1.5),
    Topic("redis", "redis evicts keys under memory pressure", 1.0),
)

CARDS = (
    _card("ecs-egress", "ecs", "ECS task external API timeout from missing SG egress", ("ecs", "timeout", "sg"), 0.9,
          "Allow egress 443 in the task's security group."),
    _card("ecs-nat", "ecs", "ECS task timeout because the NAT gateway route is missing", ("ecs", "timeout", "nat"),
          0.55, "Add a route to the NAT gateway in the private subnet."),
    _card("ecs-dns", "ecs", "ECS external API timeout blamed on DNS resolution", ("ecs", "timeout", "dns"), 0.2,
          "Switch the task to the VPC resolver."),
    _card("rds-sg", "rds", "RDS connection timeout from the security group inbound rule", ("rds", "timeout", "sg"),
          0.85, "Allow 5432 from the app's security group."),
    _card("rds-pool", "rds", "RDS connection timeout when the pool is exhausted", ("rds", "timeout", "pool"), 0.45,
          "Raise the pool size and add a timeout."),
    _card("pytest-timeout", "pytest", "pytest hangs in CI on a network call without timeout",
          ("pytest", "ci", "timeout"), 0.8, "Give every request a timeout; add pytest-timeout."),
    _card("pytest-fixture", "pytest", "pytest hangs in CI from shared fixture state", ("pytest", "ci", "fixtures"),
          0.35, "Isolate fixtures with tmp_path."),
    # Right at first; on day 90 the library it describes changes and the fix stops working.
    _card("expo-pin", "expo", "Expo app crash on startup fixed by pinning react-native-screens",
          ("expo", "react-native-screens", "crash"), 0.9, "Pin react-native-screens to 3.29."),
    _card("alb-keepalive", "alb", "ALB 502 from backend keep-alive shorter than the idle timeout",
          ("alb", "502", "keep-alive"), 0.75, "Set the backend keep-alive above the ALB idle timeout."),
    _card("tf-rename", "terraform", "Terraform rule rename duplicate error", ("terraform", "rename", "duplicate"),
          0.8, "Use create_before_destroy, or import the rule by its new name."),
)

LESSONS = (
    Lesson("kafka", "Kafka consumer lag grows when max.poll.records is too high",
           "consumer lag keeps growing; rebalances every few minutes",
           "lower max.poll.records and raise max.poll.interval.ms", ("kafka", "consumer", "lag"), 0.8),
    Lesson("redis", "Redis evicts keys under memory pressure with allkeys-lru",
           "keys disappear under memory pressure", "set maxmemory-policy volatile-lru and raise maxmemory",
           ("redis", "memory", "eviction"), 0.7),
)


def baseline(days: int = 240, sessions_per_day: int = 8, seed: int = 7, decay_after_days: int | None = None,
             name: str = "baseline", rejecter_share: float = 0.0) -> Scenario:
    """Every phenomenon at once: good and poor cards, one that becomes wrong on day 90, a topic
    that stops coming up after day 60 (its card goes stale), lessons through the Inbox, and a
    flood of 12 near duplicates of a good card on day 150. A shorter run scales those days down
    (the CI's short form also shortens the decay threshold, so decay shows within its days)."""
    stale_until = min(60, days // 4)
    topics = tuple(Topic(t.name, t.query, t.weight, (0, stale_until)) if t.name == "terraform" else t for t in TOPICS)
    return Scenario(name, days, sessions_per_day, topics, CARDS, LESSONS,
                    changes=((min(90, days // 2), "expo-pin", 0.05),),
                    duplicates=((min(150, days * 5 // 8), "alb-keepalive", 12),), seed=seed,
                    rejecter_share=rejecter_share, decay_after_days=decay_after_days,
                    notes={"stale_until": stale_until})


def with_rejecter(days: int = 240, sessions_per_day: int = 8, seed: int = 7,
                  decay_after_days: int | None = None) -> Scenario:
    """The baseline world, with a fifth of the sessions run by an agent that rejects every card
    it applies (a broken integration, or a model that never admits a card helped)."""
    return baseline(days, sessions_per_day, seed, decay_after_days, name="with_rejecter", rejecter_share=0.2)


SCENARIOS = {"baseline": baseline, "with_rejecter": with_rejecter}
