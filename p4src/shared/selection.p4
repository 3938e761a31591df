// Which algorithms' declarations a program carries: its constants
// (defines.p4), metadata fields (headers.p4) and shared actions. A BMv2 profile
// (p4src/v1model/profile.p4, included before this file) keeps only its own
// algorithm's: BMv2 resets every metadata field of every packet, at about 650
// instructions per field (docs/profiles.md), and p4c warns about what a
// program does not use. The all-in-one BMv2 program and the Tofino build
// (which does not include profile.p4) carry everything.
#ifndef MMAQM_SELECTION_P4
#define MMAQM_SELECTION_P4

#if !defined(MMAQM_PROFILE_P4)
#define MMAQM_USES_ALL
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_RED_FAMILY) || defined(MMAQM_HAS_MCDT) \
    || defined(MMAQM_HAS_FRED) || defined(MMAQM_HAS_UPTA)
#define MMAQM_USES_POLICY_EPOCH
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_RED_FAMILY) || defined(MMAQM_HAS_FRED)
#define MMAQM_USES_AVERAGES        // fixed point, EWMA and idle decay (averages.p4)
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_RED_FAMILY) || defined(MMAQM_HAS_FRED) \
    || defined(MMAQM_HAS_MCDT)
#define MMAQM_USES_RED_STEPS       // red_steps.p4 (MCDT: the policy epoch step)
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_RED_FAMILY) || defined(MMAQM_HAS_FRED)
#define MMAQM_USES_RED_AVERAGE     // the port's RED average and its parameters
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_RED_FAMILY)
#define MMAQM_USES_RED_OPTIONS     // red_drop_test: gentle, ECN, wait
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_CBT_RED_ALL) \
    || defined(MMAQM_HAS_CBT_RED_TCP_ONLY)
#define MMAQM_USES_CBT
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_USES_CBT) || defined(MMAQM_HAS_DCBT) \
    || defined(MMAQM_HAS_DCBT_CHIPS)
#define MMAQM_USES_CLASS_AVERAGES  // class_average_update; untagged_th_scaled
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_DCBT) || defined(MMAQM_HAS_DCBT_CHIPS)
#define MMAQM_USES_DCBT
#endif
// The per-flow guard inside the tagged class (tag_guard.p4): CBT, D-CBT, ChIPS.
#if defined(MMAQM_USES_CLASS_AVERAGES)
#define MMAQM_USES_TAG_GUARD
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_DCBT_CHIPS)
#define MMAQM_USES_CHIPS
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_MCDT)
#define MMAQM_USES_MCDT
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_FRED)
#define MMAQM_USES_FRED
#endif
#if defined(MMAQM_USES_ALL) || defined(MMAQM_HAS_UPTA)
#define MMAQM_USES_UPTA
#endif

#endif
