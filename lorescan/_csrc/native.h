/* Declarations shared by the C sources of lorescan._native (see module.c). */
#ifndef LORESCAN_NATIVE_H
#define LORESCAN_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* what a place holds: not noted yet; keyed, without or with secondary keys; constant; never a
 * candidate (disabled, or no keys) */
enum { UNKNOWN = 0, PRIMARY = 1, SECONDARY = 2, CONSTANT = 3, NEVER = 4 };

typedef struct {
    PyObject_HEAD
    Py_ssize_t size;       /* places in the plan */
    uint8_t *kind;         /* per place: one of the kinds above */
    uint8_t *exclude;      /* per place: excluded from recursion */
    int8_t *logic;         /* per place: the selective logic 0-3, or -1 */
    uint32_t *start;       /* per place: where its needles start in `needles` */
    uint32_t *n_primary;   /* per place: how many primary needles, then the secondary ones */
    uint32_t *n_secondary;
    uint32_t *needles;     /* every noted place's needle ids, one after another */
    size_t used, capacity;
    /* the candidates' order */
    Py_ssize_t n_gids;     /* entries in the books (gids) */
    int32_t *place_of;     /* per gid: its place, or -1 outside the plan */
    PyObject *lists;       /* per needle id: the gids listed under it (a list of sequences) */
    Py_ssize_t n_lists;
    uint32_t *list_start;  /* per needle id: where its places start in `list_places` */
    uint32_t *list_count;  /* per needle id: how many places, or UINT32_MAX: not read yet */
    int32_t *list_places;
    size_t lp_used, lp_capacity;
} PlaceGates;

extern PyTypeObject ls_PlaceGatesType;

/* attribute names, interned once (module.c) */
extern PyObject *s_ignore_budget, *s_rolls, *s_macros, *s_content, *s_gid, *s_key, *s_group_names, *s_group,
    *s_update, *s_pass_index, *s_bucket, *s_prevent_recursion, *s_dict, *s_mes, *s_name, *s_strip, *s_is_system,
    *s_pydantic_extra, *s_pydantic_fields_set, *s_pydantic_private, *s_depth, *s_role, *s_entries, *s_position,
    *s_before, *s_after, *s_nids, *s_kind, *s_order_num, *s_probability, *s_user, *s_assistant;

/* attrs.c */
PyObject *ls_getattr(PyObject *obj, PyObject *name);
PyObject *ls_entry_text(PyObject *ce, PyObject *gid, PyObject *contents);
int ls_intern_all(const char *const *texts, int n, PyObject **out);
int ls_slot_offsets(PyTypeObject *cls, PyObject *const *names, int n, Py_ssize_t *offsets, const char *who);
PyObject *ls_slot_or_attr(PyObject *obj, PyTypeObject *cls, Py_ssize_t offset, PyObject *name);
/* gates.c */
PyObject *ls_bitmap(PyObject *self, PyObject *ids);
PyObject *ls_json_string(PyObject *self, PyObject *text);
PyObject *ls_json_dump(PyObject *self, PyObject *value);
PyObject *ls_json_layout(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* order.c */
PyObject *ls_gates_scan_order(PlaceGates *self, PyObject *const *args, Py_ssize_t nargs);
/* budget.c */
int ls_as_ll(PyObject *v, long long *out);
int ls_attr_true(PyObject *ce, PyObject *name);
PyObject *ls_spend_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_sum_line_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* buckets.c */
PyObject *ls_fill_buckets(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_recursion_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_with_groups(PyObject *self, PyObject *now);
PyObject *ls_by_order(PyObject *self, PyObject *entries);
/* hits.c */
PyObject *ls_collect_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_lines_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* window.c */
PyObject *ls_scan_window(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_kept_indexes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* messages.c */
PyObject *ls_plain_models(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_bare_models(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_model_dicts(PyObject *self, PyObject *models);
PyObject *ls_bare_model(PyTypeObject *type, PyObject *fields, PyObject *fields_set);
PyObject *ls_shaped_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_shaped_model(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_shape_key(PyObject *self, PyObject *d);
PyObject *ls_role_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* compile.c */
int ls_compile_init(void);
PyObject *ls_compiled_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_plan_facts(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* listing.c */
int ls_listing_init(void);
PyObject *ls_index_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_key_lists(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* bpe.c */
PyObject *ls_bpe_table(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ls_count_bpe(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* records.c */
PyObject *ls_activation_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
