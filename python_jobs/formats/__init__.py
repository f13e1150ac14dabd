"""The CDC JSON formats the landing job reads: the shared record model, format detection, one module per format."""
