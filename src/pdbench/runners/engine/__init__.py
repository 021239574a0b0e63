"""The one match engine (`engine`), its synchronous speed (`direct`), the `CallBroker` every
provider call goes through (`broker`), and a run's progress on stderr (`progress`)."""
