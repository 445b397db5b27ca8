/*
 * pprof's profile.proto (github.com/google/pprof, proto/profile.proto):
 * the message and field numbers heaptrace writes (output/pprof_proto.c)
 * and reads back for `heaptrace diff` (profile/read_proto.c), named once
 * so that the two cannot disagree.  PPROF_<MESSAGE>_<FIELD>.
 */
#ifndef HT_PPROF_H
#define HT_PPROF_H

/* Protobuf wire types: the low 3 bits of a field's key. */
enum pb_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,             /* length-delimited: bytes, strings, messages, packed repeated */
	PB_I32 = 5,
};

enum pprof_field {
	/* message Profile, the top level */
	PPROF_PROFILE_SAMPLE_TYPE = 1,          /* ValueType, one per value column */
	PPROF_PROFILE_SAMPLE = 2,
	PPROF_PROFILE_MAPPING = 3,
	PPROF_PROFILE_LOCATION = 4,
	PPROF_PROFILE_FUNCTION = 5,
	PPROF_PROFILE_STRING_TABLE = 6,         /* every string the others index; [0] is "" */
	PPROF_PROFILE_TIME_NANOS = 9,
	PPROF_PROFILE_DURATION_NANOS = 10,
	PPROF_PROFILE_PERIOD_TYPE = 11,
	PPROF_PROFILE_PERIOD = 12,
	PPROF_PROFILE_COMMENT = 13,
	PPROF_PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	/* message ValueType */
	PPROF_VALUETYPE_TYPE = 1,
	PPROF_VALUETYPE_UNIT = 2,

	/* message Sample */
	PPROF_SAMPLE_LOCATION_ID = 1,           /* packed, the innermost first */
	PPROF_SAMPLE_VALUE = 2,                 /* packed, one per sample type */
	PPROF_SAMPLE_LABEL = 3,

	/* message Label */
	PPROF_LABEL_KEY = 1,
	PPROF_LABEL_STR = 2,
	PPROF_LABEL_NUM = 3,

	/* message Mapping */
	PPROF_MAPPING_ID = 1,
	PPROF_MAPPING_MEMORY_START = 2,
	PPROF_MAPPING_MEMORY_LIMIT = 3,
	PPROF_MAPPING_FILE_OFFSET = 4,
	PPROF_MAPPING_FILENAME = 5,
	PPROF_MAPPING_BUILD_ID = 6,
	PPROF_MAPPING_HAS_FUNCTIONS = 7,
	PPROF_MAPPING_HAS_FILENAMES = 8,
	PPROF_MAPPING_HAS_LINE_NUMBERS = 9,
	PPROF_MAPPING_HAS_INLINE_FRAMES = 10,

	/* message Location */
	PPROF_LOCATION_ID = 1,
	PPROF_LOCATION_MAPPING_ID = 2,
	PPROF_LOCATION_ADDRESS = 3,             /* a return address - 1: within the call */
	PPROF_LOCATION_LINE = 4,                /* Line, the innermost inline frame first */

	/* message Line */
	PPROF_LINE_FUNCTION_ID = 1,
	PPROF_LINE_LINE = 2,

	/* message Function */
	PPROF_FUNCTION_ID = 1,
	PPROF_FUNCTION_NAME = 2,
	PPROF_FUNCTION_SYSTEM_NAME = 3,
	PPROF_FUNCTION_FILENAME = 4,
};

/* heaptrace's sample types, in the order of a Sample's values (PPROF_SAMPLE_VALUE). */
#define PPROF_SAMPLE_TYPES { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "realloc_objects", "realloc_space" }
#define PPROF_SAMPLE_UNITS { "count", "bytes", "count", "bytes", "count", "bytes" }
#define PPROF_N_SAMPLE_TYPES 6

#endif
