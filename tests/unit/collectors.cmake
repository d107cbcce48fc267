# Unit tests of the agent's collector fixes: the Ready summary of the node
# conditions (agent/agent_node.c; agent__queue_event wrapped so events are
# counted, not stored) and the /proc scan of the process collector's
# fallback (agent/kc_process_scan.c) on fixture proc trees in
# fixtures/procfs/kthread/.
es_unit_test(test_agent_node
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_agent_node.c
  LIBS esagent
  WRAP agent__queue_event)
es_unit_test(test_kcp_scan
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_kcp_scan.c
  LIBS esagent es_bpf_process)
