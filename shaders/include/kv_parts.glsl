// A paged KV store larger than one binding (the _split variants, -DKV_SPLIT) is up to
// kKvMaxParts bindings per side of kv_part_slots whole rows each: slot s is row
// s % kv_part_slots of part s / kv_part_slots. Part 0 is bound where an unsplit store is;
// parts 1..3 of keys at KV_EXTRA_BINDING + 0..2, of values at KV_EXTRA_BINDING + 3..5 (the
// host binds part 0 again for parts a store does not have). Without KV_SPLIT a store is one
// binding and kv_part / kv_row are 0 / the slot. The includer defines KV_PART_SLOTS_ID (its
// first free specialization constant) and KV_EXTRA_BINDING (its first free binding).
#if defined(KV_SPLIT)
layout(constant_id = KV_PART_SLOTS_ID) const uint kv_part_slots = 1u;
uint kv_part(uint slot) { return slot / kv_part_slots; }
uint kv_row(uint slot) { return slot % kv_part_slots; }
// OP(ARRAY) on the array of part `part`: NAME##0 .. NAME##3.
#define KV_ON_PART(part, NAME, OP) \
  switch (part) {                  \
    case 0u: OP(NAME##0); break;   \
    case 1u: OP(NAME##1); break;   \
    case 2u: OP(NAME##2); break;   \
    default: OP(NAME##3); break;   \
  }
// A read of entry i of part `part` of NAME##0 .. NAME##3.
#define KV_PART_ENTRY(part, NAME, i)                                              \
  ((part) == 0u ? NAME##0[i] : (part) == 1u ? NAME##1[i] : (part) == 2u ? NAME##2[i] \
                                                                      : NAME##3[i])
#else
uint kv_part(uint slot) { return 0u; }
uint kv_row(uint slot) { return slot; }
#define KV_ON_PART(part, NAME, OP) OP(NAME);
#define KV_PART_ENTRY(part, NAME, i) NAME[i]
#endif
