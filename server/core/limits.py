"""The sizes a client may send, checked once at the edge (protocol/commands.py,
protocol/options.py), and what one socket may hold (docs/protocol.md, Configuration
``max_subscriptions``, and a cost budget). Every number and its reason is in docs/protocol.md,
Limits.

Names and ids are kept: a client name is written into every durable log entry of its publishes
and remembered with its sequence after the session ends, ids are echoed on every ack and message.
A 900 KB client name made 50 publishes grow the log by 45 MB, so they are bounded here.
"""

from __future__ import annotations

from typing import Any

from .errors import BAD_MESSAGE, INVALID_OPTIONS, CommandError

MAX_NAME_LENGTH = 256  # client_name, user_id, topic names (characters)
MAX_ID_LENGTH = 256  # cid, sub_id and query_id strings, and each SowKey of sow_keys
MAX_PASSWORD_LENGTH = 1024
MAX_OPTIONS_LENGTH = 4096  # the ``o`` field of any command
MAX_PROJECTION_BYTES = 64 * 1024  # an aggregation's projection (and so an ``o`` that holds one)
MAX_BOOKMARK_LENGTH = 64  # a log position or an ISO-8601 time is under 40
MAX_ACKS_LENGTH = 128  # the ``a`` field: all five ack kinds take 46
MAX_PATHS = 64  # paths in one select list or conflation_key
MAX_PATH_LENGTH = 256  # characters of one path in an option
MAX_TX_COMMANDS = 10_000  # commands in one transaction (docs/protocol.md, Transactions)
MAX_WINDOW_ROWS = 10_000  # top_n of a live window (docs/protocol.md, Viewports): what one move may resend
MAX_ORDERBY_LENGTH = 4096  # characters of an ``orderby``
MAX_ORDERBY_TERMS = 16  # fields of an ``orderby``: every sort key reads each of them
MAX_INTEGER = 2**63 - 1  # integer ids, sequences and counts fit a signed 64-bit integer
MIN_INTEGER = -(2**63)

# Subscription conflation holds every change of its interval until the interval ends: past a
# minute that is a delay that holds memory, not a conflation.
MAX_CONFLATION_S = 60.0

# The estimated filter work (filters/cost.py, ~150-300 ns a unit) of the subscriptions of one socket
# that no index can skip: every publish to their topic evaluates all of them.
SOCKET_FILTER_BUDGET = 10_000
# What an index term (``/id = 5``, ``/sym IN (...)``) counts of a filter's cost: a lookup, not an
# evaluation per publish (session/quota.py, publish_cost).
INDEX_TERM_UNITS = 3

# The sorted copies of topics that one socket's live windows keep (quota.admit_order): distinct
# orders, and the records they hold besides the largest (about 160 bytes a record, measured with
# orders of 50,000: 500,000 is about 80 MB), so one view of any topic is always possible and
# copies of it are not.
SOCKET_ORDERS = 64
SOCKET_ORDER_RECORDS = 500_000

# What the whole server's views may hold, across every socket (session/held.py): the records its
# window orders keep (about 160 bytes a record: 1.3 GB), and the groups its aggregations keep
# (about 440 bytes a group with its table's entry: 1.8 GB). A socket's own bounds do not depend
# on other sockets; these keep many sockets within theirs from filling the machine.
SERVER_ORDER_RECORDS = 8_000_000
SERVER_GROUPS = 4_000_000
# One aggregation's groups may weigh AGGREGATION_WEIGHT_PER_RECORD groups for each record of its
# topic, or AGGREGATION_GROUPS_FLOOR when that is more: groups are never more than the records
# they group, but a group weighs more for long field names (aggregate/parse.py,
# ``Spec.group_weight``), so this keeps an aggregation to a few times what its topic holds (a
# group a record with up to 1,320 bytes of field names, 64 fields of 20 characters, fits).
AGGREGATION_WEIGHT_PER_RECORD = 4
AGGREGATION_GROUPS_FLOOR = 10_000

# Orders whose last window closed that a topic keeps, kept up to date, for the next window over
# them (fanout/orders.py): a grid sorted back to its first order, a page reloaded, the next user
# of a link. Building the order of 1,000,000 records takes seconds; keeping one costs about 160
# bytes a record and a sorted insert per change. The least recently used go first.
IDLE_ORDERS = 4
IDLE_ORDER_RECORDS = 2_000_000

# The orders a topic's configuration may keep from the start (``orders``, fanout/orders.py): each
# costs a change of its sort field a sorted remove and insert (7-13 us at 1,000,000 records) and
# about 140 bytes a record.
MAX_KEPT_ORDERS = 8

# Aggregations over one grouping of the same records share one group table (aggregate/view.py):
# every change of the source reads each of its inputs (the union of their projections'), about
# 0.1-0.3 us each. Past this many, a new projection gets a table of its own instead of making
# every change cost the others more.
MAX_SHARED_GROUP_INPUTS = 128

# The filter work one command may do in one pass over a topic (a snapshot, a new window's order,
# a delete by filter): records x the filter's estimated cost (filters/cost.py, about 100-220 ns a
# unit; a regular expression is 100 or more). A snapshot's pass and a new window's order are read
# in slices (handlers/preparing.py); a delete by filter is still one step that other sockets wait
# for: 400 ORed regular expressions over 20,000 records held every socket for 100 s. At this bound
# a pass takes a few seconds at the worst; filters of a few terms pass over a million records, a
# regular expression over 300,000.
COMMAND_FILTER_WORK = 30_000_000
# One slice of a pass over a topic that is read in slices (fanout/passes.py), in the same units:
# about 1-2 ms (the runtime reads slices until its own slice of time is up: runtime/connection.py).
SLICE_UNITS = 10_000
# Passes read in slices at once in the whole server; the others' commands wait their turn, in
# order, before their pass takes its copy of the records (runtime/connection.py). A pass holds what
# it has found until its command runs (a sorted pass of a million records: 100 MB or more of sort
# keys), so a thousand sockets each asking for one must not hold a thousand.
SERVER_PASSES = 4
# A command's pass over a topic estimated at more work than this is read in slices (handlers/
# preparing.py): below it, a pass takes 10 ms or so at most and runs whole.
SLICED_PASS_UNITS = 80_000
# What each projected field of an aggregation adds to a record's share of that pass, besides its
# argument's estimated cost: reading it and accumulating it (quota.admit_aggregation_pass).
AGGREGATE_UNITS = 1
# What sorting adds to a record's share of that pass (quota.admit_sorted_pass): its sort key reads
# every term, and the sort compares keys. Measured: one term over 1,000,000 records, 3-4 s.
SORT_UNITS = 8
ORDER_TERM_UNITS = 3

# The work one transaction may do in its one step (session/tx_work.py), in the filter budget's
# units (about 100-220 ns each): about 0.5-1 s. Reading a record costs RECORD_UNITS, deciding and
# applying a publish PUBLISH_UNITS (10-20 us measured), each change a unit per subscription of its
# topic plus that subscription's filter cost.
TX_WORK_BUDGET = 5_000_000
RECORD_UNITS = 10
PUBLISH_UNITS = 50


def text_field(raw: dict[str, Any], name: str, limit: int) -> None:
    """``bad message`` when the string field ``name`` is longer than ``limit`` characters."""
    value = raw.get(name)
    if type(value) is str and len(value) > limit:
        raise CommandError(BAD_MESSAGE, f"{name} too long ({len(value)} characters, at most {limit})")


def check_identifier(name: str, value: Any) -> None:
    """``bad message`` for an id string past ``MAX_ID_LENGTH`` or an integer outside 64 bits."""
    if type(value) is str:
        if len(value) > MAX_ID_LENGTH:
            raise CommandError(
                BAD_MESSAGE, f"{name} too long ({len(value)} characters, at most {MAX_ID_LENGTH})"
            )
    elif type(value) is int and not MIN_INTEGER <= value <= MAX_INTEGER:
        raise CommandError(BAD_MESSAGE, f"{name} too large (a signed 64-bit integer at most)")


def check_options_length(text: str) -> None:
    if len(text) > MAX_OPTIONS_LENGTH + (MAX_PROJECTION_BYTES if "projection=" in text else 0):
        raise CommandError(
            INVALID_OPTIONS, f"o too long ({len(text)} characters, at most {MAX_OPTIONS_LENGTH})"
        )
