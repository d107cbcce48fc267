# Unit tests of the nftables backend of EgressPolicy enforcement: the nft
# script generated from parsed specs and the policies read back from a
# table listing (agent/egress_nft_text.c).
es_unit_test(test_egress_nft SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_egress_nft.c
  LIBS esagent escommon)
