/* lorescan._native: an optional C extension for the engine's per-entry steps (module.c: the module).
 *
 * The engine's passes spend most of their time on per-entry work over Python objects scattered
 * over the compiled book. These sources do such steps over compact arrays or in C loops:
 *   gates.c    each place's record, and the gates of a pass's candidates (PlaceGates);
 *   order.c    a pass's candidates in scan order (PlaceGates.scan_order);
 *   budget.c   the budget step for a pass's common entries (spend_lines), and the sum of a recursion
 *              text's remembered line counts (sum_line_counts);
 *   records.c  the activation records (activation_records);
 *   buckets.c  the prompt's buckets (fill_buckets) and the order they are filled in (by_order), what
 *              recursion scans (recursion_lines), and a pass's candidates in inclusion groups
 *              (with_groups);
 *   hits.c     the needles an automaton finds in a piece of scan text (collect_hits), and a recursion
 *              text's remembered hits line by line (lines_hits);
 *   window.c   the scan window's messages, trimmed, and their hits (scan_window); the chat's
 *              messages that are not system messages (kept_indexes);
 *   messages.c chat messages made from plain dicts (plain_models); models from trusted dicts
 *              (bare_models); models from dicts of a known shape (shape_key, shaped_fields,
 *              shaped_model); the service's OpenAI-style messages read before (role_messages);
 *              a result's example and at-depth entries as its JSON's dicts (model_dicts);
 *   attrs.c    slot attributes read at their offsets (ls_getattr, for the files above);
 *   compile.c  a book's entries compiled (compiled_entries), and a plan's per-entry facts (plan_facts);
 *   listing.c  each needle's entries, listed while a key index is built (key_lists, index_keys);
 *   json.c     a string as a JSON literal (json_string: the service's replies carry entry texts);
 *              a reply made of plain JSON values as compact ASCII JSON in one buffer (json_dump);
 *              compact JSON laid out with an indent (json_layout: writing a book back);
 *   bpe.c      cl100k token counts over lorescan's cached rank table (bpe_table, count_bpe).
 *
 * The Python engine stays the reference: each file names the Python code it must agree with, and
 * the tests compare the two. Built when a C compiler is there (setup.py marks it optional);
 * without it, or with LORESCAN_NATIVE=0, the engine runs the same steps in Python.
 */
#include "native.h"

PyObject *s_ignore_budget, *s_rolls, *s_macros, *s_content, *s_gid, *s_key, *s_group_names, *s_group, *s_update,
    *s_pass_index, *s_bucket, *s_prevent_recursion, *s_dict, *s_mes, *s_name, *s_strip, *s_is_system,
    *s_pydantic_extra, *s_pydantic_fields_set, *s_pydantic_private, *s_depth, *s_role, *s_entries, *s_position,
    *s_before, *s_after, *s_nids, *s_kind, *s_order_num, *s_probability, *s_user, *s_assistant;

static PyMethodDef module_methods[] = {
    {"activation_records", (PyCFunction)(void (*)(void))ls_activation_records, METH_FASTCALL,
     "activation_records(activated, contents, pass_of, records, texts, later, forced_type, make) -> list: each "
     "activated entry's record, shared while its content and pass are unchanged."},
    {"spend_lines", (PyCFunction)(void (*)(void))ls_spend_lines, METH_FASTCALL,
     "spend_lines(now, j, memo, state, budget, base, skip, by_key, count, contents, activated, done, pass_of, "
     "group_names, group_fields, roll, substitute, failed, cut) -> int: the budget step of a pass for its common "
     "entries, from now[j] (roll: roll(entry), or (roll, sticky, random, draws) to roll here as roll would); "
     "the index of the first entry left to the caller."},
    {"fill_buckets", (PyCFunction)(void (*)(void))ls_fill_buckets, METH_FASTCALL,
     "fill_buckets(entries, contents, plain, em, example, depth, groups, rest) -> None: each entry's text in its "
     "bucket (plain positions 0-3, example messages, at-depth groups of int depth and role), the other entries "
     "to `rest` as (entry, text) pairs, in order; empty texts dropped."},
    {"recursion_lines", (PyCFunction)(void (*)(void))ls_recursion_lines, METH_FASTCALL,
     "recursion_lines(now, failed, contents) -> (entries, lines): the entries whose content recursion scans "
     "(not failed, not preventing recursion), in order, and their texts."},
    {"collect_hits", (PyCFunction)(void (*)(void))ls_collect_hits, METH_FASTCALL,
     "collect_hits(matches, text, found, word, length, base) -> None: add the new needle ids an automaton's "
     "iter(text) finds to `found`, but whole-word needles with an ASCII word character beside them."},
    {"with_groups", (PyCFunction)ls_with_groups, METH_O,
     "with_groups(now) -> list: the entries of now whose group_names is true, in order."},
    {"by_order", (PyCFunction)ls_by_order, METH_O,
     "by_order(entries) -> list | None: the entries by order_num, greatest first, equal ones in their order; "
     "None when an order_num is not an int or float, or is NaN."},
    {"lines_hits", (PyCFunction)(void (*)(void))ls_lines_hits, METH_FASTCALL,
     "lines_hits(lines, memo, hits) -> (list, set): each line's remembered hits (memo[line], else hits(line)) "
     "and the set of every needle id among them."},
    {"sum_line_counts", (PyCFunction)(void (*)(void))ls_sum_line_counts, METH_FASTCALL,
     "sum_line_counts(lines, memo) -> int | None: the sum of the lines' remembered counts when every line's "
     "is remembered and each after the first starts with a character that is not whitespace, else None."},
    {"scan_window", (PyCFunction)(void (*)(void))ls_scan_window, METH_FASTCALL,
     "scan_window(cache, kept, length, chat, named, include_names, get, trimmed, strip, start, upto, message_hits, "
     "none, memo, hits) -> None: ScanBuffer.ensure_scanned for messages start..upto-1 of a ScanMessages."},
    {"kept_indexes", (PyCFunction)(void (*)(void))ls_kept_indexes, METH_FASTCALL,
     "kept_indexes(chat, start, stop, message_type, only_messages=False) -> Sequence[int] | None: the indexes in "
     "start..stop-1 of the messages that are not system messages (a range when none is); with only_messages, "
     "None when an item is not exactly of message_type."},
    {"role_messages", (PyCFunction)(void (*)(void))ls_role_messages, METH_FASTCALL,
     "role_messages(items, start, memo, user_name, char_name, out) -> int: from items[start] on, the OpenAI-style "
     "user and assistant messages read before, memo[(role, content, name, user_name, char_name)], appended to "
     "out; the index of the first item left to the caller."},
    {"plain_models", (PyCFunction)(void (*)(void))ls_plain_models, METH_FASTCALL,
     "plain_models(items, cls, names, kinds, defaults, validate) -> list: each item as a `cls` instance: made "
     "directly from a dict whose field values have exactly their kinds (b's' str, b'b' bool), else validate(item)."},
    {"shape_key", (PyCFunction)ls_shape_key, METH_O,
     "shape_key(d) -> (keys, types): (tuple(d), tuple(map(type, d.values())))."},
    {"shaped_fields", (PyCFunction)(void (*)(void))ls_shaped_fields, METH_FASTCALL,
     "shaped_fields(base, layout, given) -> (fields, extra_values): a copy of base with given's values in place "
     "(layout: per key of given, the field's name as base holds it, or None for an extra key), and the extra "
     "values (build_directly's dicts for a known shape)."},
    {"shaped_model", (PyCFunction)(void (*)(void))ls_shaped_model, METH_FASTCALL,
     "shaped_model(cls, fields, fields_set, extra, private) -> instance: cls.__new__(cls) with its pydantic "
     "attributes set as object.__setattr__ sets them."},
    {"bare_models", (PyCFunction)(void (*)(void))ls_bare_models, METH_FASTCALL,
     "bare_models(cls, dicts) -> list: construct(cls, d) for each trusted dict (its __dict__ the dict itself)."},
    {"model_dicts", (PyCFunction)ls_model_dicts, METH_O,
     "model_dicts(models) -> list: each model's __dict__ copied as a result's JSON has it (lists copied, "
     "non-finite floats as None)."},
    {"compiled_entries", (PyCFunction)(void (*)(void))ls_compiled_entries, METH_FASTCALL,
     "compiled_entries(cls, start, book, entries, no_decorators, make) -> list: each entry as a `cls` instance "
     "numbered from start, its slots set as CompiledEntry.__init__ sets them; an entry with a decorator, an order "
     "that is not an exact int, a constant not a bool or None, or a true delayUntilRecursion is make(gid, book, "
     "entry)."},
    {"plan_facts", (PyCFunction)(void (*)(void))ls_plan_facts, METH_FASTCALL,
     "plan_facts(cls, entries, pos, constants, levels, delayed, truthy, to_number) -> tuple: Plan.__init__'s "
     "loop: each entry's place in pos[gid], the constant and @@activate gids, the delay-until-recursion levels, "
     "the delayed entries; (the greatest scan depth (0.0 for none), whether an order_num is NaN)."},
    {"index_keys", (PyCFunction)(void (*)(void))ls_index_keys, METH_FASTCALL,
     "index_keys(klists, gids, cache, lists, always, skip, macro, prepare) -> list: each entry's primary keys "
     "prepared by lookup in cache (else prepare(keys)) and listed under their needles (list_item), but `macro` items; "
     "the places (in klists) of the entries with a `macro` item, in order."},
    {"key_lists", (PyCFunction)(void (*)(void))ls_key_lists, METH_FASTCALL,
     "key_lists(cls, entries) -> (klists, slists, gids, distinct) | None: each entry's primary and "
     "secondary keys and gid, and the set of every key (primary ones first); None when a key cannot be hashed."},
    {"json_layout", (PyCFunction)(void (*)(void))ls_json_layout, METH_FASTCALL,
     "json_layout(text, indent) -> str: compact JSON text laid out as json.dumps(indent=indent) lays it out "
     "(indent < 0: compact), each lone surrogate in a string written as a \\uXXXX escape."},
    {"json_dump", (PyCFunction)ls_json_dump, METH_O,
     "json_dump(value) -> bytes | None: json.dumps(value, separators=(',', ':'), allow_nan=False) as ASCII "
     "bytes for exact dicts with str keys, lists, tuples, strs, ints, finite floats, bools and None; None "
     "for anything else (json's own encoder then decides)"},
    {"json_string", (PyCFunction)ls_json_string, METH_O,
     "json_string(text) -> str: text as a JSON string literal, everything beyond ASCII escaped "
     "(what json.encoder.encode_basestring_ascii gives)."},
    {"bpe_table", (PyCFunction)(void (*)(void))ls_bpe_table, METH_FASTCALL,
     "bpe_table(blob, starts) -> capsule: the cl100k rank table for count_bpe (token r is "
     "blob[starts[r]:starts[r + 1]], starts an array('I'))."},
    {"count_bpe", (PyCFunction)(void (*)(void))ls_count_bpe, METH_FASTCALL,
     "count_bpe(table, text) -> int: the cl100k tokens of text (tiktoken's count), or -1 when text has a "
     "character unassigned in Unicode 14.0 or a surrogate."},
    {"bitmap", (PyCFunction)ls_bitmap, METH_O,
     "bitmap(ids) -> bytes: bit n set for each needle id n in the set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "lorescan._native",
    "Optional C steps of the engine's passes (the Python engine is the reference).", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m;
    if (PyType_Ready(&ls_PlaceGatesType) < 0)
        return NULL;
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_ignore_budget, "ignore_budget");
    INTERN(s_rolls, "rolls");
    INTERN(s_macros, "macros");
    INTERN(s_content, "content");
    INTERN(s_gid, "gid");
    INTERN(s_key, "key");
    INTERN(s_group_names, "group_names");
    INTERN(s_group, "group");
    INTERN(s_update, "update");
    INTERN(s_pass_index, "pass_index");
    INTERN(s_bucket, "bucket");
    INTERN(s_prevent_recursion, "prevent_recursion");
    INTERN(s_dict, "__dict__");
    INTERN(s_mes, "mes");
    INTERN(s_name, "name");
    INTERN(s_strip, "strip");
    INTERN(s_is_system, "is_system");
    INTERN(s_pydantic_extra, "__pydantic_extra__");
    INTERN(s_pydantic_fields_set, "__pydantic_fields_set__");
    INTERN(s_pydantic_private, "__pydantic_private__");
    INTERN(s_depth, "depth");
    INTERN(s_role, "role");
    INTERN(s_entries, "entries");
    INTERN(s_position, "position");
    INTERN(s_before, "before");
    INTERN(s_after, "after");
    INTERN(s_nids, "nids");
    INTERN(s_kind, "kind");
    INTERN(s_order_num, "order_num");
    INTERN(s_probability, "probability");
    INTERN(s_user, "user");
    INTERN(s_assistant, "assistant");
#undef INTERN
    if (ls_compile_init() < 0 || ls_listing_init() < 0)
        return NULL;
    m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ls_PlaceGatesType);
    if (PyModule_AddObject(m, "PlaceGates", (PyObject *)&ls_PlaceGatesType) < 0) {
        Py_DECREF(&ls_PlaceGatesType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
