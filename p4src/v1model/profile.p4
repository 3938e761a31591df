// Compile-time selection of the algorithms in the v1model program (BMv2 profiles).
// Without a profile macro the program is the all-in-one one: every algorithm,
// chosen per port at run time by port_policy. -DMMAQM_PROFILE_<NAME> (one of the
// TNA build's names: DROP_TAIL RED CBT_RED_ALL CBT_RED_TCP_ONLY DCBT DCBT_CHIPS
// MCDT FRED UPTA; make build PROFILE=<NAME>) keeps only that algorithm's control,
// its port_policy action and what it alone uses (UPTA: the edge-port and BFD
// tables; FRED and ChIPS: their egress release), plus DROP_TAIL: the plain FIFO
// with a limit that a deployment's other ports run (a profile's P4Info has both
// actions in port_policy). Every other source is shared: each profile is the
// same P4 selected by the MMAQM_HAS_<NAME> macros below.
#ifndef MMAQM_PROFILE_P4
#define MMAQM_PROFILE_P4

#if defined(MMAQM_PROFILE_DROP_TAIL)
#define MMAQM_PROFILE_NAME "mmaqm-DROP_TAIL"
#define MMAQM_HAS_DROP_TAIL
#elif defined(MMAQM_PROFILE_RED)
#define MMAQM_PROFILE_NAME "mmaqm-RED"
#define MMAQM_HAS_RED
#elif defined(MMAQM_PROFILE_CBT_RED_ALL)
#define MMAQM_PROFILE_NAME "mmaqm-CBT_RED_ALL"
#define MMAQM_HAS_CBT_RED_ALL
#elif defined(MMAQM_PROFILE_CBT_RED_TCP_ONLY)
#define MMAQM_PROFILE_NAME "mmaqm-CBT_RED_TCP_ONLY"
#define MMAQM_HAS_CBT_RED_TCP_ONLY
#elif defined(MMAQM_PROFILE_DCBT)
#define MMAQM_PROFILE_NAME "mmaqm-DCBT"
#define MMAQM_HAS_DCBT
#elif defined(MMAQM_PROFILE_DCBT_CHIPS)
#define MMAQM_PROFILE_NAME "mmaqm-DCBT_CHIPS"
#define MMAQM_HAS_DCBT_CHIPS
#elif defined(MMAQM_PROFILE_MCDT)
#define MMAQM_PROFILE_NAME "mmaqm-MCDT"
#define MMAQM_HAS_MCDT
#elif defined(MMAQM_PROFILE_FRED)
#define MMAQM_PROFILE_NAME "mmaqm-FRED"
#define MMAQM_HAS_FRED
#elif defined(MMAQM_PROFILE_UPTA)
#define MMAQM_PROFILE_NAME "mmaqm-UPTA"
#define MMAQM_HAS_UPTA
#else
// the all-in-one program
#define MMAQM_HAS_DROP_TAIL
#define MMAQM_HAS_RED
#define MMAQM_HAS_CBT_RED_ALL
#define MMAQM_HAS_CBT_RED_TCP_ONLY
#define MMAQM_HAS_DCBT
#define MMAQM_HAS_DCBT_CHIPS
#define MMAQM_HAS_MCDT
#define MMAQM_HAS_FRED
#define MMAQM_HAS_UPTA
#endif

// Every profile: the other ports' plain FIFO (no per-packet cost on a port of the
// profile's own algorithm; BMv2 runs the port_policy action's control only).
#define MMAQM_HAS_DROP_TAIL

// Every v1model program parses, routes and manages IPv6 (docs/ipv6.md); the
// Tofino build does not (yet).
#define MMAQM_HAS_IPV6

// The RED-based policies share load_red_policy (aqm.p4).
#if defined(MMAQM_HAS_RED) || defined(MMAQM_HAS_CBT_RED_ALL) \
    || defined(MMAQM_HAS_CBT_RED_TCP_ONLY) || defined(MMAQM_HAS_DCBT) \
    || defined(MMAQM_HAS_DCBT_CHIPS)
#define MMAQM_HAS_RED_FAMILY
#endif

#endif
