"""mmaqm's test oracle: what the tests check the switch and the controller against.

Never imported by the product (the ``mmaqm`` package; tests/controller/test_layers.py
enforces it); it imports the product for the encodings it models.

  * :mod:`.fixedpoint_model`: the bit-exact per-port model of the P4 pipeline
    (``PortModel``: RED, CBT, D-CBT, ChIPS, MCDT, drop-tail), ``red_decide``, the
    averages' arithmetic, drop-reason names;
  * :mod:`.fred_model`: FRED in the data plane's form (``arrive``, ``depart``,
    ``FredPortModel``) and the paper's float form (``reference_arrive``, ...), slot
    collision probabilities and register memory;
  * :mod:`.mcdt_reference`: MCDT's period update in plain floats, the decision per mode;
  * :mod:`.upta_theory`: UPTA's paper form in floats (eqs. 5-6, 20-26, Fig. 7);
  * :mod:`.upta_model`: UPTA and BFD bit-exact with upta.p4 (``UptaPortModel``,
    ``BfdEndpoint``, the probe rewrite), and ``FloatFlow``, one flow in floats.
"""
